"""Self-observability at /metrics: tool calls, LLM calls, worker sessions."""

from __future__ import annotations

import dataclasses

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from prometheus_client.parser import text_string_to_metric_families

from agents_app.kernel.events import NullSink
from agents_app.kernel.loop import run_agent
from agents_app.llm.offline import OfflineProvider
from agents_app.tools.cancel import CancelToken
from agents_app.tools.invoke import invoke_tool, record_unknown_tool
from chat_app.models import ChatSession
from tests.support.agents import context, make_tool, persona

pytestmark = pytest.mark.django_db(transaction=True)


def configure(monkeypatch, **changes) -> None:
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG, **changes))


@pytest.fixture(autouse=True)
def public_metrics(monkeypatch):
    """The counting tests scrape anonymously; the access tests below set their own policy."""
    configure(monkeypatch, metrics_public=True, metrics_token=None)


def scrape(client, **headers) -> dict[tuple[str, tuple], float]:
    response = client.get("/metrics", **headers)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples, name, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_tool_invocations_and_durations_are_counted(client, org):
    async def ok(ctx):
        return "fine"

    async def broken(ctx):
        raise RuntimeError("boom")

    before = scrape(client)
    async_to_sync(invoke_tool)(make_tool("metrics_ok_tool", ok), context(org), "{}")
    async_to_sync(invoke_tool)(make_tool("metrics_ok_tool", ok), context(org), "{}")
    async_to_sync(invoke_tool)(make_tool("metrics_broken_tool", broken), context(org), "{}")
    after = scrape(client)
    name = "ongrid_tool_invocations_total"
    assert (
        value(after, name, tool="metrics_ok_tool", status="ok")
        - value(before, name, tool="metrics_ok_tool", status="ok")
        == 2
    )
    assert (
        value(after, name, tool="metrics_broken_tool", status="error")
        - value(before, name, tool="metrics_broken_tool", status="error")
        == 1
    )
    assert value(after, "ongrid_tool_duration_seconds_count", tool="metrics_ok_tool") >= 2


def test_hallucinated_tool_names_share_one_label(client, org):
    before = scrape(client)
    async_to_sync(record_unknown_tool)("made_up_tool_1", context(org), "{}", ["query_devices"])
    async_to_sync(record_unknown_tool)("made_up_tool_2", context(org), "{}", ["query_devices"])
    after = scrape(client)
    name = "ongrid_tool_invocations_total"
    assert (
        value(after, name, tool="(unknown)", status="error")
        - value(before, name, tool="(unknown)", status="error")
        == 2
    )
    assert value(after, name, tool="made_up_tool_1", status="error") == 0


def test_llm_calls_are_counted_by_model_and_status(client, org):
    before = scrape(client)
    result = async_to_sync(run_agent)(
        persona=persona(),
        messages=[{"role": "user", "content": "hello"}],
        tools=[],
        ctx=context(org),
        provider=OfflineProvider(),
        sink=NullSink(),
        cancel=CancelToken(),
    )
    assert result.status == "completed"
    after = scrape(client)
    calls = "ongrid_llm_calls_total"
    assert (
        value(after, calls, model="offline", status="ok") - value(before, calls, model="offline", status="ok")
        == 1
    )
    assert value(after, "ongrid_llm_latency_seconds_count", model="offline") >= 1
    assert value(after, "ongrid_llm_tokens_total", model="offline", kind="prompt") > 0


def test_active_worker_sessions_by_status_come_from_the_database(client, org, member):
    root = ChatSession.objects.create(organization=org, user=member, agent_id="default")
    for status in ("running", "running", "pending", "completed", "killed"):
        ChatSession.objects.create(
            organization=org,
            user=member,
            agent_id="specialist-disk",
            parent_session=root,
            root_session=root,
            status=status,
        )
    samples = scrape(client)
    assert value(samples, "ongrid_worker_sessions", status="running") == 2
    assert value(samples, "ongrid_worker_sessions", status="pending") == 1


def test_metrics_are_refused_by_default_with_a_hint(client, monkeypatch):
    configure(monkeypatch, metrics_public=False, metrics_token=None)
    response = client.get("/metrics")
    assert response.status_code == 403
    assert "ONGRID_METRICS_TOKEN" in response.content.decode()
    assert "ONGRID_METRICS_PUBLIC" in response.content.decode()


def test_signed_in_staff_may_read_the_metrics(client, monkeypatch, member):
    configure(monkeypatch, metrics_public=False, metrics_token=None)
    client.force_login(member)
    assert client.get("/metrics").status_code == 403
    member.is_staff = True
    member.save()
    assert "ongrid_worker_sessions" in str(scrape(client))


def test_a_metrics_token_protects_the_endpoint(client, monkeypatch):
    configure(monkeypatch, metrics_public=False, metrics_token="scrape-me")
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert "ongrid_worker_sessions" in str(scrape(client, HTTP_AUTHORIZATION="Bearer scrape-me"))
