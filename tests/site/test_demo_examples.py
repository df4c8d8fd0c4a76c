"""Issue 29, finding 8: on a fresh `bin/start` (the demo organization, the offline model, the
Ongrid host allowed as a device, no Prometheus) every example prompt the empty chat page offers
gets an answer built from tool calls that worked: none names a demo device nothing can reach,
none needs a data source the demo lacks, and no number in the words is taken for an incident id."""

from __future__ import annotations

import asyncio
import dataclasses
import html
import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from agents_app.api import get_runtime
from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.registry import load_builtin_tools
from audit_app.models import AuditLog, ToolStatus
from chat_app import services
from chat_app.models import ChatSession
from ops_app.models import Device

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo_admin(settings, tmp_path):
    """What `bin/start` sets up: the demo organization and its admin, no LLM key, no Prometheus."""
    settings.CONFIG = dataclasses.replace(
        settings.CONFIG, data_dir=tmp_path, llm="offline", openai_api_key="", prometheus_url=""
    )
    call_command("ongrid_bootstrap", stdout=StringIO())
    return get_user_model().objects.get(username="admin")


def examples_on_the_empty_chat(client, user, language: str) -> list[str]:
    client.force_login(user)
    page = client.get("/", HTTP_ACCEPT_LANGUAGE=language, follow=True).content.decode()
    return [html.unescape(prompt) for prompt in re.findall(r'data-prompt="([^"]*)"', page)]


def ask(user, question: str) -> tuple[str, list[AuditLog]]:
    """One turn as the chat runs it; the answer and every tool call of the turn's session tree."""
    chat = services.start_chat(user)
    services.begin_turn(chat.pk, question)
    result = asyncio.run(get_runtime().run_turn(chat.pk))
    tree = [chat.pk, *ChatSession.objects.filter(parent_session_id=chat.pk).values_list("pk", flat=True)]
    return (result.text if result else ""), list(AuditLog.objects.filter(session_id__in=tree))


@pytest.mark.parametrize("language", ["en", "es", "fr", "zh-hans"])
def test_every_example_prompt_of_the_demo_is_answered_from_tools_that_worked(client, demo_admin, language):
    prompts = examples_on_the_empty_chat(client, demo_admin, language)
    assert len(prompts) == 4, prompts
    assert any("ongrid-manager" in prompt for prompt in prompts), prompts  # the device Ongrid reaches
    for prompt in prompts:
        answer, calls = ask(demo_admin, prompt)
        assert calls, f"{prompt!r} was answered without looking at anything"
        failed = [(c.tool, c.error or c.result[:200]) for c in calls if c.status != ToolStatus.OK]
        assert not failed, (prompt, failed)
        assert not [c.tool for c in calls if '"not_configured"' in c.result], (prompt, answer)
        assert answer and "Error:" not in answer, (prompt, answer)


def test_a_demo_device_at_a_documentation_address_is_refused_before_any_connection(demo_admin):
    checkout = Device.objects.get(name="checkout-01")
    assert checkout.address.startswith("192.0.2.")
    load = load_builtin_tools()["get_host_load"]
    ctx = ToolContext(organization_id=checkout.organization_id)
    with pytest.raises(ToolError) as refused:
        asyncio.run(load.handler(ctx, device="checkout-01"))
    message = str(refused.value)
    assert "documentation address 192.0.2.21" in message and "demo estate" in message
    assert "host-key" not in message and "…" not in message  # told whole, not a key error cut short


def test_the_metrics_question_is_offered_once_the_organization_has_a_prometheus(client, demo_admin):
    from ops_app.integrations.datasources import save_data_source
    from ops_app.models import DataSource

    assert not [p for p in examples_on_the_empty_chat(client, demo_admin, "en") if "metrics" in p]
    organization = Device.objects.get(name="ongrid-manager").organization
    save_data_source(
        DataSource(
            organization=organization, name="prom", kind=DataSource.Kind.PROMETHEUS, url="http://127.0.0.1:9"
        )
    )
    prompts = examples_on_the_empty_chat(client, demo_admin, "en")
    assert "Is anything unusual in the last hour of metrics for ongrid-manager?" in prompts, prompts
