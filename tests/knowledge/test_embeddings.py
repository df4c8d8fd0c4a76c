"""Embedding the knowledge: each passage once, only what changed, everything on a model change,
batches of at most 64, failures as short reasons on the endpoint and its admin page, the egress
policy, the background thread, the command and the admin's progress."""

from __future__ import annotations

import time

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from ops_app.integrations.llm_endpoints import save_llm_endpoint
from ops_app.knowledge import background, embeddings, retrieval, vault
from ops_app.models import KnowledgeDocument, KnowledgePassage, LLMEndpoint
from tests.support.egress import INTERNAL_ANSWER

SECTIONS = {
    "Symptoms": "The standby replica falls behind the primary.",
    "Fix": "Check long transactions on the primary.",
    "Escalation": "Page the database team when lag exceeds ten minutes.",
}


def runbook(sections: dict[str, str]) -> str:
    return "\n\n".join(f"## {heading}\n\n{body}" for heading, body in sections.items())


def ingest(organization, sections=SECTIONS, source="replica.md") -> None:
    vault.ingest(
        organization,
        kind=KnowledgeDocument.Source.VAULT,
        source=source,
        title="Replica lag",
        content=runbook(sections),
    )


def endpoint_for(organization, base_url: str, model: str = "fake-embed") -> LLMEndpoint:
    return LLMEndpoint.objects.create(
        organization=organization,
        name="default",
        base_url=base_url,
        default_model="m",
        embedding_model=model,
        timeout=5,
    )


def embedded_inputs(fake_llm) -> list[str]:
    return [text for request in fake_llm.embedding_requests for text in request.body["input"]]


def test_each_passage_is_embedded_once(org, fake_llm):
    ingest(org)
    endpoint_for(org, fake_llm.base_url)
    assert background.embed_pending(org.pk) == 3
    assert background.embed_pending(org.pk) == 0
    assert len(embedded_inputs(fake_llm)) == 3
    assert background.progress(org.pk, "fake-embed") == (3, 3)
    stored = KnowledgePassage.objects.filter(organization=org).first()
    vector = embeddings.from_bytes(stored.embedding)
    assert len(vector) == 256 and abs(sum(x * x for x in vector) - 1.0) < 1e-4


def test_changing_one_section_re_embeds_only_that_passage(org, fake_llm):
    ingest(org)
    endpoint_for(org, fake_llm.base_url)
    background.embed_pending(org.pk)
    before = len(embedded_inputs(fake_llm))
    ingest(org, {**SECTIONS, "Fix": "Cancel the long transaction holding the WAL."})
    assert background.embed_pending(org.pk) == 1
    new_inputs = embedded_inputs(fake_llm)[before:]
    assert len(new_inputs) == 1 and "Cancel the long transaction" in new_inputs[0]
    assert background.progress(org.pk, "fake-embed") == (3, 3)


def test_a_model_change_re_embeds_everything(org, fake_llm):
    ingest(org)
    endpoint = endpoint_for(org, fake_llm.base_url)
    background.embed_pending(org.pk)
    endpoint.embedding_model = "fake-embed-v2"
    endpoint.save()
    assert background.progress(org.pk, "fake-embed-v2") == (0, 3)
    assert background.embed_pending(org.pk) == 3
    assert fake_llm.embedding_requests[-1].body["model"] == "fake-embed-v2"
    assert background.progress(org.pk, "fake-embed-v2") == (3, 3)


def test_requests_carry_at_most_64_inputs(org, fake_llm):
    many = {f"Step {i}": f"Check replica number {i} for lag." for i in range(150)}
    ingest(org, many)
    endpoint_for(org, fake_llm.base_url)
    assert background.embed_pending(org.pk) == 150
    sizes = [len(request.body["input"]) for request in fake_llm.embedding_requests]
    assert max(sizes) <= 64 and sum(sizes) == 150 and len(sizes) == 3


def test_a_failure_is_a_short_reason_on_the_endpoint_and_its_admin_page(org, fake_llm, client, org_admin):
    ingest(org)
    endpoint = endpoint_for(org, fake_llm.base_url)
    fake_llm.embedding_status = 503
    assert background.embed_pending(org.pk) == 0
    endpoint.refresh_from_db()
    assert endpoint.embedding_error == "HTTP 503"
    client.force_login(org_admin)
    page = client.get(reverse("admin:ops_app_llmendpoint_change", args=[endpoint.pk])).content.decode()
    assert "HTTP 503" in page and "injected" not in page
    assert "0 of 3 passages embedded" in page

    fake_llm.embedding_status = 200
    assert background.embed_pending(org.pk) == 3
    endpoint.refresh_from_db()
    assert endpoint.embedding_error == ""
    page = client.get(reverse("admin:ops_app_llmendpoint_change", args=[endpoint.pk])).content.decode()
    assert "3 of 3 passages embedded" in page


def test_a_wrong_dimension_stops_the_run_with_a_short_reason(org, fake_llm):
    ingest(org)
    endpoint = endpoint_for(org, fake_llm.base_url)
    background.embed_pending(org.pk)
    ingest(org, {**SECTIONS, "Fix": "Something new."})
    fake_llm.embedding_dimension = 12
    assert background.embed_pending(org.pk) == 0
    endpoint.refresh_from_db()
    assert endpoint.embedding_error == "the vectors have the wrong dimension"


def test_the_egress_policy_refuses_the_embedding_call(org, listener, egress_enforced):
    ingest(org)
    endpoint = endpoint_for(org, f"{listener.url}/v1")
    assert background.embed_pending(org.pk) == 0
    endpoint.refresh_from_db()
    assert "egress" in endpoint.embedding_error and INTERNAL_ANSWER not in endpoint.embedding_error
    assert listener.connections == 0
    found = retrieval.search(org.pk, "replica lag")
    assert found.mode == "full-text" and "egress" in found.note and found.hits


def test_a_server_answer_is_never_kept(org, settings):
    """An endpoint that answers 200 with something else (an internal page): a fixed reason."""
    from tests.support.egress import loopback_listener

    ingest(org)
    with loopback_listener(status=200) as server:
        endpoint = endpoint_for(org, f"{server.url}/v1")
        assert background.embed_pending(org.pk) == 0
    endpoint.refresh_from_db()
    assert endpoint.embedding_error == "the answer is not an OpenAI-compatible list of embeddings"


@pytest.mark.django_db(transaction=True)
def test_saving_an_embedding_model_embeds_in_a_background_thread(org, fake_llm, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the embedded default: a thread of this process
    ingest(org)
    endpoint = LLMEndpoint(organization=org, name="default", base_url=fake_llm.base_url, default_model="m")
    save_llm_endpoint(endpoint)
    background.join()
    assert background.progress(org.pk, "fake-embed") == (0, 3)  # no embedding model yet: nothing
    endpoint.embedding_model = "fake-embed"
    save_llm_endpoint(endpoint)
    background.join()
    assert background.progress(org.pk, "fake-embed") == (3, 3)

    from ops_app.tasks import index_knowledge_document

    document, _ = vault.save_document(
        org,
        kind=KnowledgeDocument.Source.UPLOAD,
        source="notes.md",
        title="Notes",
        content="## A\n\nDisk full.",
    )
    index_knowledge_document(document.pk)
    background.join()
    assert background.progress(org.pk, "fake-embed") == (4, 4)


@pytest.mark.django_db(transaction=True)
def test_the_admin_action_starts_embedding(org, fake_llm, client, org_admin, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the embedded default: a thread of this server
    ingest(org)
    endpoint = endpoint_for(org, fake_llm.base_url)
    client.force_login(org_admin)
    response = client.post(
        reverse("admin:ops_app_llmendpoint_changelist"),
        {"action": "embed_knowledge_now", "_selected_action": [endpoint.pk]},
        follow=True,
    )
    background.join()
    assert [str(m) for m in response.context["messages"]] == [
        "default: embedding the knowledge in the background"
    ]


def test_the_command_embeds_and_reports_progress(org, fake_llm, capsys):
    ingest(org)
    endpoint = endpoint_for(org, fake_llm.base_url)
    call_command("ongrid_embed_knowledge", "--organization", org.slug)
    assert f"{org.slug}: 3 embedded (3 of 3 passages embedded)" in capsys.readouterr().out
    fake_llm.embedding_status = 500
    ingest(org, {**SECTIONS, "Fix": "Changed."})
    with pytest.raises(CommandError):
        call_command("ongrid_embed_knowledge")
    assert "stopped: HTTP 500" in capsys.readouterr().err
    assert LLMEndpoint.objects.get(pk=endpoint.pk).embedding_error == "HTTP 500"


@pytest.mark.django_db(transaction=True)
def test_with_redis_the_embedding_runs_as_a_celery_task(org, fake_llm):
    if not django_settings.CONFIG.uses_redis:
        pytest.skip("the Celery path needs REDIS_URL (the embedded default is tested above)")
    from celery.contrib.testing.worker import start_worker
    from celery.signals import task_postrun
    from django.db import connections

    from ongrid_site.celery import app as celery_app

    def close_worker_connections(**kwargs) -> None:
        connections.close_all()  # the worker thread's connection, so the test database can be flushed

    ingest(org)
    task_postrun.connect(close_worker_connections, weak=False)
    try:
        with start_worker(celery_app, perform_ping_check=False, pool="solo", shutdown_timeout=15):
            save_llm_endpoint(
                LLMEndpoint(
                    organization=org, name="default", base_url=fake_llm.base_url, default_model="m",
                    embedding_model="fake-embed",
                )
            )  # fmt: skip
            deadline = time.monotonic() + 30
            while background.progress(org.pk, "fake-embed") != (3, 3) and time.monotonic() < deadline:
                time.sleep(0.1)
    finally:
        task_postrun.disconnect(close_worker_connections)
    assert background.progress(org.pk, "fake-embed") == (3, 3)


def test_the_add_form_offers_the_embedding_model(client, org_admin):
    client.force_login(org_admin)
    page = client.get(reverse("admin:ops_app_llmendpoint_add"))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="embedding_model"' in html
    assert "semantic search is off (no embedding model)" in html
