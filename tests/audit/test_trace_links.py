"""Trace ids on the audit pages (docs/audit.md): a traced turn's rows keep the id of the trace the
exporter sent, the session and call pages show it, and link to the trace viewer when
ONGRID_TRACE_URL_TEMPLATE is set."""

from __future__ import annotations

import dataclasses
import html

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse

from agents_app.runtime import dedupe
from agents_app.runtime.core import Runtime
from audit_app.models import AuditLog
from chat_app import services
from fakes.openai_server import call, text, tool_calls
from ops_app.core import tracing
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.otlp import start_tracing

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("tracing_off_after", "close_async_db_connections"),
]

TEMPLATE = "https://grafana.example/explore?left=tempo&traceId={trace_id}"


@pytest.fixture(autouse=True)
def fresh_dedupe(monkeypatch):
    monkeypatch.setattr(dedupe, "DISPATCHES", dedupe.DispatchCache())


async def one_turn(member, agents_llm):
    chat = await sync_to_async(services.start_chat)(member)
    agents_llm.add(
        "default", tool_calls(call("query_incidents", {}, id="q1")), text("No incidents are open.")
    )
    await services.abegin_turn(chat.pk, "anything open?")
    assert (await Runtime().run_turn(chat.pk)).status == "completed"
    return chat


def page(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200
    return html.unescape(response.content.decode())


async def test_the_session_and_call_pages_link_the_exported_trace(
    member, auditor, agents_llm, otlp_receiver, settings
):
    start_tracing(settings, otlp_receiver, trace_url_template=TEMPLATE)
    chat = await one_turn(member, agents_llm)
    assert tracing.force_flush()
    trace_id = otlp_receiver.one("ongrid.turn").trace_id
    row = await AuditLog.objects.aget(tool_call_id="q1")

    session_page = await sync_to_async(page)(auditor, reverse("audit-session", args=[chat.pk]))
    call_page = await sync_to_async(page)(auditor, reverse("audit-call", args=[row.pk]))

    link = f'href="https://grafana.example/explore?left=tempo&traceId={trace_id}"'
    assert link in session_page and f"<code>{trace_id}</code>" in session_page
    assert link in call_page and "Trace" in call_page


async def test_without_a_viewer_the_trace_id_shows_unlinked(
    member, auditor, agents_llm, otlp_receiver, settings
):
    start_tracing(settings, otlp_receiver)
    chat = await one_turn(member, agents_llm)
    trace_id = (await AuditLog.objects.aget(tool_call_id="q1")).trace_id
    assert len(trace_id) == 32

    session_page = await sync_to_async(page)(auditor, reverse("audit-session", args=[chat.pk]))

    assert f'<code class="trace">{trace_id}</code>' in session_page
    assert 'class="trace" href' not in session_page


async def test_untraced_turns_show_no_trace(member, auditor, agents_llm, settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, trace_url_template=TEMPLATE)
    chat = await one_turn(member, agents_llm)
    row = await AuditLog.objects.aget(tool_call_id="q1")
    assert row.trace_id == ""

    session_page = await sync_to_async(page)(auditor, reverse("audit-session", args=[chat.pk]))
    call_page = await sync_to_async(page)(auditor, reverse("audit-call", args=[row.pk]))

    assert "grafana.example" not in session_page + call_page
    assert 'class="traces"' not in session_page
