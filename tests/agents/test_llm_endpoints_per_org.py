"""LLM endpoints per organization (docs/integrations.md): two organizations, two fake model
servers; each organization's turns reach only its own endpoint, with its own key and model, and
the usage is attributed to the endpoint in the audit rows and the audit session page. An
organization without an endpoint uses the deployment's environment."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.db import connection
from django.test import Client
from django.urls import reverse

from agents_app.runtime.core import Runtime
from audit_app.models import LLMCall
from chat_app import services
from fakes.openai_server import FakeLLM, text
from ops_app.integrations.llm_endpoints import save_llm_endpoint
from ops_app.models import LLMEndpoint
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)
KEY_A, KEY_B = "sk-acme-endpoint-key-4410", "sk-globex-endpoint-key-9921"


@pytest.fixture
def two_model_servers():
    acme = FakeLLM(api_key=KEY_A, models=("acme-model", "acme-small")).start()
    globex = FakeLLM(api_key=KEY_B, models=("globex-model",)).start()
    try:
        yield acme, globex
    finally:
        acme.stop()
        globex.stop()


def add_endpoint(org, name: str, server: FakeLLM, key: str, model: str) -> LLMEndpoint:
    endpoint = LLMEndpoint(
        organization=org, name=name, base_url=server.base_url, api_key=key, default_model=model, max_retries=0
    )
    return save_llm_endpoint(endpoint)


async def ask(user, question: str):
    chat = await sync_to_async(services.start_chat)(user)
    await services.abegin_turn(chat.pk, question)
    result = await Runtime().run_turn(chat.pk)
    assert result.status == "completed", result.error
    return chat


def asked(server: FakeLLM) -> list[str]:
    """The user's question of each request the server received."""
    return [next(m["content"] for m in r.messages if m["role"] == "user") for r in server.chat_requests]


async def test_each_organization_reaches_only_its_own_endpoint_and_usage_is_attributed(
    org,
    other_org,
    member,
    outsider,
    two_model_servers,
    agents_llm,
    fake_llm,
    close_async_db_connections,  # noqa: F811
):
    acme, globex = two_model_servers
    await sync_to_async(add_endpoint)(org, "acme-vllm", acme, KEY_A, "acme-model")
    await sync_to_async(add_endpoint)(other_org, "globex-ollama", globex, KEY_B, "globex-model")
    acme.script(text("acme answer"))
    globex.script(text("globex answer"), text("globex again"))

    await ask(member, "acme question")
    await ask(outsider, "globex question")
    globex_chat = await ask(outsider, "second globex question")

    assert asked(acme) == ["acme question"]
    assert asked(globex) == ["globex question", "second globex question"]
    assert fake_llm.chat_requests == []  # the deployment's endpoint was never used
    assert {r.body["model"] for r in acme.chat_requests} == {"acme-model"}
    assert {r.headers["authorization"] for r in globex.chat_requests} == {f"Bearer {KEY_B}"}
    rows = [
        row async for row in LLMCall.objects.order_by("id").values("organization_id", "endpoint", "model")
    ]
    assert rows == [
        {"organization_id": org.pk, "endpoint": "acme-vllm", "model": "acme-model"},
        {"organization_id": other_org.pk, "endpoint": "globex-ollama", "model": "globex-model"},
        {"organization_id": other_org.pk, "endpoint": "globex-ollama", "model": "globex-model"},
    ]

    auditor = await sync_to_async(create_user)("gina", "gina-pass-123", other_org, roles.AUDITOR)
    client = Client()
    await sync_to_async(client.force_login)(auditor)
    page = (await sync_to_async(client.get)(reverse("audit-session", args=[globex_chat.pk]))).content.decode()
    assert "LLM endpoint globex-ollama" in page and "1 calls · 11 in, 7 out" in page
    assert "acme-vllm" not in page


async def test_without_an_endpoint_the_deployment_environment_is_used(
    org,
    member,
    two_model_servers,
    agents_llm,
    fake_llm,
    close_async_db_connections,  # noqa: F811
):
    acme, _ = two_model_servers
    agents_llm.add("default", text("from the deployment"))

    await ask(member, "who answers?")

    assert acme.chat_requests == [] and len(fake_llm.chat_requests) == 1
    assert (await LLMCall.objects.aget()).endpoint == ""


def test_api_key_is_encrypted_and_the_admin_test_finds_the_default_model(
    client, org, org_admin, two_model_servers
):
    acme, _ = two_model_servers
    client.force_login(org_admin)
    form = {
        "name": "acme-vllm",
        "base_url": acme.base_url,
        "api_key": KEY_A,
        "default_model": "acme-model",
        "timeout": "30",
        "max_retries": "1",
        "is_default": "on",
    }
    assert client.post(reverse("admin:ops_app_llmendpoint_add"), form).status_code == 302
    endpoint = LLMEndpoint.objects.get(organization=org)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM ops_app_llmendpoint")
        assert KEY_A not in json.dumps(cursor.fetchall(), default=str)
    page = client.get(reverse("admin:ops_app_llmendpoint_change", args=[endpoint.pk])).content.decode()
    assert KEY_A not in page

    response = client.post(
        reverse("admin:ops_app_llmendpoint_changelist"),
        {"action": "test_endpoint", "_selected_action": [endpoint.pk]},
        follow=True,
    )
    # How many models and whether the default is one: not their names, which are the endpoint's answer.
    assert [str(m) for m in response.context["messages"]] == [
        "acme-vllm answers: it serves the default model 'acme-model' (models served: 2)"
    ]

    LLMEndpoint.objects.filter(pk=endpoint.pk).update(api_key="sk-wrong")
    response = client.post(
        reverse("admin:ops_app_llmendpoint_changelist"),
        {"action": "test_endpoint", "_selected_action": [endpoint.pk]},
        follow=True,
    )
    assert [str(m) for m in response.context["messages"]] == [
        "acme-vllm FAILED: the endpoint refused the API key"
    ]


def test_the_test_button_on_the_form_checks_that_one_endpoint(client, org, org_admin, two_model_servers):
    acme, _ = two_model_servers
    endpoint = add_endpoint(org, "acme-vllm", acme, KEY_A, "acme-model")
    client.force_login(org_admin)
    change = reverse("admin:ops_app_llmendpoint_change", args=[endpoint.pk])
    test_url = reverse("admin:ops_app_llmendpoint_test", args=[endpoint.pk])
    assert f'action="{test_url}"' in client.get(change).content.decode()

    response = client.post(test_url, follow=True)
    assert response.redirect_chain[-1][0] == change
    # The verdict only, never the endpoint's list of names (docs/security.md, "What Test shows").
    assert [str(m) for m in response.context["messages"]] == [
        "acme-vllm answers: it serves the default model 'acme-model' (models served: 2)"
    ]
    assert "acme-small" not in response.content.decode()
    LLMEndpoint.objects.filter(pk=endpoint.pk).update(api_key="sk-wrong")
    refused = client.post(test_url, follow=True)
    assert [str(m) for m in refused.context["messages"]] == [
        "acme-vllm FAILED: the endpoint refused the API key"
    ]


def test_org_admins_never_see_another_organizations_endpoints(
    client, org_admin, other_org, two_model_servers
):
    _, globex = two_model_servers
    theirs = add_endpoint(other_org, "globex-ollama", globex, KEY_B, "globex-model")
    client.force_login(org_admin)
    assert "globex-ollama" not in client.get(reverse("admin:ops_app_llmendpoint_changelist")).content.decode()
    assert client.get(reverse("admin:ops_app_llmendpoint_change", args=[theirs.pk])).status_code in (302, 404)
