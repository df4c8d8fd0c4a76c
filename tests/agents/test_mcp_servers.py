"""MCP servers per organization (docs/integrations.md), against a real MCP server written with the
SDK and served over streamable HTTP in its own process: discovery (on save, in the admin, with
schemas), write until marked read, persona wildcards, an audited read call, a write held by the
review gate (a rejected one never runs), a server that disappears mid-turn, and tenancy."""

from __future__ import annotations

import json
import re

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse

from agents_app.models import MutatingProposal
from agents_app.personas.registry import aget_registry
from agents_app.runtime.core import Runtime
from agents_app.tools.binding import organization_tools
from agents_app.tools.invoke import invoke_tool
from agents_app.tools.toolbag import build_toolbag
from agents_app.toolsets.contract import ToolContext
from audit_app.models import AuditLog
from chat_app import services
from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls
from ops_app.integrations.mcp_servers import discover_tools
from ops_app.models import McpServer, McpTool
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.gate import make_chat, make_user_agent, make_worker
from tests.support.mcp_server import running_mcp_server

pytestmark = pytest.mark.django_db(transaction=True)
STATUS, RESTART = "mcp__widgets__widget_status", "mcp__widgets__restart_widget"
SEARCH = "ToolSearch"


@pytest.fixture(scope="module")
def widgets(tmp_path_factory):
    with running_mcp_server(tmp_path_factory.mktemp("mcp")) as server:
        yield server


def connect(org, url: str, *, status_is_read: bool = True) -> McpServer:
    server = McpServer.objects.create(organization=org, name="widgets", url=url)
    assert discover_tools(server).ok
    if status_is_read:
        McpTool.objects.filter(server=server, name="widget_status").update(tool_class="read")
    return server


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_tools_are_discovered_on_save_as_writes_and_an_admin_marks_one_read(
    org_admin, org, outsider, widgets
):
    client = login(org_admin)
    response = client.post(
        reverse("admin:ops_app_mcpserver_add"),
        {
            "name": "widgets",
            "transport": "streamable_http",
            "url": widgets.url,
            "timeout": "20",
            "enabled": "on",
            "tools-TOTAL_FORMS": "0",
            "tools-INITIAL_FORMS": "0",
            "tools-MIN_NUM_FORMS": "0",
            "tools-MAX_NUM_FORMS": "1000",
        },
        follow=True,
    )
    assert "widgets: 2 tools; new (write until marked read): restart_widget, widget_status" in [
        str(m) for m in response.context["messages"]
    ]
    server = McpServer.objects.get(organization=org)
    tools = {t.name: t for t in McpTool.objects.filter(server=server)}
    assert {name: t.tool_class for name, t in tools.items()} == {
        "restart_widget": "write",
        "widget_status": "write",
    }
    page = client.get(reverse("admin:ops_app_mcpserver_change", args=[server.pk])).content.decode()
    assert "widget_statusArguments" in page  # the schema is shown

    ordered = list(McpTool.objects.filter(server=server).order_by("name"))
    form = {
        "name": "widgets",
        "transport": "streamable_http",
        "url": widgets.url,
        "timeout": "20",
        "enabled": "on",
        "tools-TOTAL_FORMS": "2",
        "tools-INITIAL_FORMS": "2",
        "tools-MIN_NUM_FORMS": "0",
        "tools-MAX_NUM_FORMS": "1000",
    }
    for index, tool in enumerate(ordered):
        form[f"tools-{index}-id"] = str(tool.pk)
        form[f"tools-{index}-server"] = str(server.pk)
        form[f"tools-{index}-tool_class"] = "read" if tool.name == "widget_status" else "write"
    assert client.post(reverse("admin:ops_app_mcpserver_change", args=[server.pk]), form).status_code == 302
    assert McpTool.objects.get(name="widget_status").tool_class == "read"
    assert McpTool.objects.get(name="restart_widget").tool_class == "write"

    # Another organization's admin sees neither the server nor its tools.
    outsider.is_staff = True
    outsider.save()
    from ops_app.tenancy import roles
    from ops_app.tenancy.accounts import set_membership

    set_membership(outsider, outsider.membership.organization, roles.ORG_ADMIN)
    theirs = login(outsider)
    assert "widgets" not in theirs.get(reverse("admin:ops_app_mcpserver_changelist")).content.decode()
    assert theirs.get(reverse("admin:ops_app_mcpserver_change", args=[server.pk])).status_code in (302, 404)


def test_the_test_button_on_the_form_discovers_that_servers_tools(org_admin, org, widgets):
    server = McpServer.objects.create(organization=org, name="widgets", url=widgets.url)
    gone = McpServer.objects.create(organization=org, name="gone", url="http://127.0.0.1:9/mcp")
    client = login(org_admin)
    change = reverse("admin:ops_app_mcpserver_change", args=[server.pk])
    test_url = reverse("admin:ops_app_mcpserver_test", args=[server.pk])
    assert f'action="{test_url}"' in client.get(change).content.decode()

    response = client.post(test_url, follow=True)
    assert response.redirect_chain[-1][0] == change
    assert [str(m) for m in response.context["messages"]] == [
        "widgets: 2 tools; new (write until marked read): restart_widget, widget_status"
    ]
    assert McpTool.objects.filter(server=server).count() == 2
    failed = client.post(reverse("admin:ops_app_mcpserver_test", args=[gone.pk]), follow=True)
    (message,) = [str(m) for m in failed.context["messages"]]
    assert message.startswith("gone: discovery failed: the MCP server 'gone' is unavailable")


def test_headers_are_a_multi_line_box_that_is_still_write_only(org_admin, org):
    client = login(org_admin)
    secret = "Bearer mcp-header-secret-7731"
    response = client.post(
        reverse("admin:ops_app_mcpserver_add"),
        {
            "name": "widgets",
            "transport": "streamable_http",
            "url": "http://127.0.0.1:9/mcp",
            "headers": f"Authorization: {secret}\r\nX-Tenant: acme",
            "timeout": "20",
            "tools-TOTAL_FORMS": "0",
            "tools-INITIAL_FORMS": "0",
            "tools-MIN_NUM_FORMS": "0",
            "tools-MAX_NUM_FORMS": "1000",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    server = McpServer.objects.get(organization=org)
    assert server.headers.splitlines() == [f"Authorization: {secret}", "X-Tenant: acme"]
    page = client.get(reverse("admin:ops_app_mcpserver_change", args=[server.pk])).content.decode()
    box = re.search(r'<textarea name="headers"[^>]*>(.*?)</textarea>', page, re.S)
    assert box is not None and box.group(1).strip() == ""  # typed one per line, never shown back
    assert "mcp-header-secret-7731" not in page
    assert '<label class="secret-clear" for="id_headers_1">' in page


def test_a_server_that_cannot_be_reached_is_reported_on_discovery(org):
    server = McpServer.objects.create(organization=org, name="gone", url="http://127.0.0.1:9/mcp")
    found = discover_tools(server)
    assert not found.ok and "the MCP server 'gone' is unavailable" in found.error
    assert "unavailable" in McpServer.objects.get(pk=server.pk).discovery_error


async def test_persona_wildcards_select_the_organizations_mcp_tools(
    org,
    other_org,
    widgets,
    close_async_db_connections,  # noqa: F811
):
    await sync_to_async(connect)(org, widgets.url)
    await sync_to_async(make_user_agent)(org, "widget-ops", "mutating-with-confirm", ["mcp__widgets__*"])
    await sync_to_async(make_user_agent)(
        org, "widget-watch", "read-only", ["mcp__widgets__*", "query_promql"]
    )
    registry = await aget_registry(org.pk)
    available = await organization_tools(org.pk)

    ops = build_toolbag(registry.by_name("widget-ops"), available, coordinator=False)
    watch = build_toolbag(registry.by_name("widget-watch"), available, coordinator=False)

    assert {t.name for t in ops} == {STATUS, RESTART}
    assert {t.name for t in watch} == {STATUS, "query_promql"}  # read-only never gets the write
    assert available[STATUS].parameters["required"] == ["widget"]
    assert not any(name.startswith("mcp__") for name in await organization_tools(other_org.pk))


async def test_a_read_call_in_a_turn_is_answered_and_audited(
    org,
    member,
    widgets,
    agents_llm,
    close_async_db_connections,  # noqa: F811
):
    await sync_to_async(connect)(org, widgets.url)
    answers = []
    agents_llm.add(
        "default",
        tool_calls(call(SEARCH, {"query": "widget status"}, id="s1")),
        tool_calls(call(STATUS, {"widget": "w-7"}, id="m1")),
        lambda request: answers.append(tool_messages(request)[-1]["content"]) or text("w-7 is fine"),
    )
    chat = await sync_to_async(services.start_chat)(member)
    await services.abegin_turn(chat.pk, "Is widget w-7 healthy?")

    result = await Runtime().run_turn(chat.pk)

    assert result.status == "completed" and answers == ["widget w-7 is green (3 replicas ready)"]
    # The coordinator's many tools: the MCP tool is deferred until ToolSearch finds it by its words.
    first, second = agents_llm.seen["default"][:2]
    assert STATUS not in first.tool_names and SEARCH in first.tool_names and STATUS in second.tool_names
    row = await AuditLog.objects.aget(tool_call_id="m1")
    assert (row.organization_id, row.tool, row.tool_class, row.status) == (org.pk, STATUS, "read", "ok")
    assert json.loads(row.arguments) == {"widget": "w-7"}

    bad = await invoke_tool(
        (await organization_tools(org.pk))[STATUS], ToolContext(organization_id=org.pk), '{"widget": 7}'
    )
    assert bad.status == "error" and "invalid arguments" in bad.content  # the server's schema applies


@pytest.mark.parametrize("verdict", ["reject", "approve"])
async def test_a_write_call_is_held_by_the_review_gate(
    org,
    member,
    widgets,
    agents_llm,
    verdict,
    close_async_db_connections,  # noqa: F811
):
    await sync_to_async(connect)(org, widgets.url)
    await sync_to_async(make_user_agent)(org, "widget-ops", "mutating-with-confirm", ["mcp__widgets__*"])
    chat = await sync_to_async(make_chat)(member, "Restart widget w-9, it is wedged")
    worker = await sync_to_async(make_worker)(chat, "widget-ops")
    agents_llm.add("reviewer", text(f"Decision: {verdict}\nSOP: the widget runbook says so"))
    before = len(widgets.journal_lines())
    tool = (await organization_tools(org.pk))[RESTART]
    ctx = ToolContext(
        organization_id=org.pk,
        session_id=worker.pk,
        user_id=member.pk,
        persona_name="widget-ops",
        tool_call_id="w1",
    )

    outcome = await invoke_tool(tool, ctx, json.dumps({"widget": "w-9", "reason": "wedged since 10:02"}))

    proposal = await MutatingProposal.objects.aget(tool_call_id="w1")
    assert proposal.payload["action"] == "MCP tool restart_widget on server widgets"
    assert (
        proposal.payload["blast_radius"] == "tenant_wide" and '"widget": "w-9"' in proposal.payload["target"]
    )
    if verdict == "reject":
        assert outcome.status == "rejected"
        assert len(widgets.journal_lines()) == before  # never executed
    else:
        assert outcome.status == "ok" and "restarted" in outcome.content
        assert widgets.journal_lines()[before:] == ["restarted w-9"]


async def test_a_server_that_disappears_mid_turn_is_a_tool_error_and_the_turn_completes(
    org,
    member,
    agents_llm,
    tmp_path,
    close_async_db_connections,  # noqa: F811
):
    seen = []
    with running_mcp_server(tmp_path) as server:
        await sync_to_async(connect)(org, server.url)

        def first_answer_then_vanish(request):
            seen.append(tool_messages(request)[-1]["content"])
            server.stop()
            return tool_calls(call(STATUS, {"widget": "w-2"}, id="m2"))

        agents_llm.add(
            "default",
            tool_calls(call(SEARCH, {"query": f"select:{STATUS}"}, id="s1")),
            tool_calls(call(STATUS, {"widget": "w-1"}, id="m1")),
            first_answer_then_vanish,
            lambda request: (
                seen.append(tool_messages(request)[-1]["content"]) or text("the widget server is down")
            ),
        )
        chat = await sync_to_async(services.start_chat)(member)
        await services.abegin_turn(chat.pk, "Check widgets w-1 and w-2")

        result = await Runtime().run_turn(chat.pk)

    assert result.status == "completed" and result.text == "the widget server is down"
    assert seen[0] == "widget w-1 is green (3 replicas ready)"
    assert seen[1].startswith("Error: the MCP server 'widgets' is unavailable")
    assert (await AuditLog.objects.aget(tool_call_id="m2")).status == "error"


def test_stdio_servers_need_the_platform_setting(org, settings):
    import dataclasses

    from django.core.exceptions import ValidationError

    server = McpServer(organization=org, name="local", transport="stdio", command="widgets-mcp --stdio")
    settings.CONFIG = dataclasses.replace(settings.CONFIG, mcp_allow_stdio=False)
    with pytest.raises(ValidationError, match="ONGRID_MCP_ALLOW_STDIO"):
        server.full_clean()
    settings.CONFIG = dataclasses.replace(settings.CONFIG, mcp_allow_stdio=True)
    server.full_clean()  # allowed once platform staff turn it on
