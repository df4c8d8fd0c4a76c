"""MCP servers over the two other transports (docs/integrations.md), each against the real SDK
test server in its own process: SSE (older servers) and stdio (a command on the Ongrid host,
refused unless platform staff allow it, and configurable by platform staff only)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse

from agents_app.runtime.core import Runtime
from agents_app.tools.binding import organization_tools
from agents_app.tools.invoke import invoke_tool
from agents_app.toolsets.contract import ToolContext
from audit_app.models import AuditLog
from chat_app import services
from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls
from ops_app.integrations.mcp_servers import discover_tools
from ops_app.models import McpServer, McpTool
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.mcp_server import running_mcp_server, stdio_command

pytestmark = pytest.mark.django_db(transaction=True)
STATUS, RESTART = "mcp__widgets__widget_status", "mcp__widgets__restart_widget"
GREEN = "widget {} is green (3 replicas ready)"


def connect(org, **where) -> McpServer:
    server = McpServer.objects.create(organization=org, name="widgets", **where)
    found = discover_tools(server)
    assert found.ok, found.error
    McpTool.objects.filter(server=server, name="widget_status").update(tool_class="read")
    return server


def allow_stdio(settings, allowed: bool) -> None:
    settings.CONFIG = dataclasses.replace(settings.CONFIG, mcp_allow_stdio=allowed)


def add_form(**fields) -> dict:
    form = {
        "name": "widgets",
        "transport": "stdio",
        "url": "",
        "command": "",
        "timeout": "20",
        "enabled": "on",
        "tools-TOTAL_FORMS": "0",
        "tools-INITIAL_FORMS": "0",
        "tools-MIN_NUM_FORMS": "0",
        "tools-MAX_NUM_FORMS": "1000",
    }
    form.update(fields)
    return form


# --- SSE ---------------------------------------------------------------------------------------


async def test_an_sse_server_is_discovered_and_a_read_call_in_a_turn_is_audited(
    org,
    member,
    agents_llm,
    tmp_path,
    close_async_db_connections,  # noqa: F811
):
    with running_mcp_server(tmp_path, "sse") as server:
        assert server.url.endswith("/sse")
        stored = await sync_to_async(connect)(org, transport="sse", url=server.url)
        names = [name async for name in McpTool.objects.filter(server=stored).values_list("name", flat=True)]
        assert sorted(names) == ["restart_widget", "widget_status"]
        answers = []
        agents_llm.add(
            "default",
            tool_calls(call("ToolSearch", {"query": f"select:{STATUS}"}, id="find")),
            tool_calls(call(STATUS, {"widget": "w-3"}, id="s1")),
            lambda request: answers.append(tool_messages(request)[-1]["content"]) or text("w-3 is fine"),
        )
        chat = await sync_to_async(services.start_chat)(member)
        await services.abegin_turn(chat.pk, "Is widget w-3 healthy?")

        result = await Runtime().run_turn(chat.pk)

    assert result.status == "completed" and answers == [GREEN.format("w-3")]
    row = await AuditLog.objects.aget(tool_call_id="s1")
    assert (row.organization_id, row.tool, row.tool_class, row.status) == (org.pk, STATUS, "read", "ok")
    assert json.loads(row.arguments) == {"widget": "w-3"}


async def test_an_sse_server_that_disappears_gives_a_tool_error_and_the_turn_completes(
    org,
    member,
    agents_llm,
    tmp_path,
    close_async_db_connections,  # noqa: F811
):
    seen = []
    with running_mcp_server(tmp_path, "sse") as server:
        await sync_to_async(connect)(org, transport="sse", url=server.url)

        def answer_then_vanish(request):
            seen.append(tool_messages(request)[-1]["content"])
            server.stop()
            return tool_calls(call(STATUS, {"widget": "w-5"}, id="s3"))

        agents_llm.add(
            "default",
            tool_calls(call("ToolSearch", {"query": f"select:{STATUS}"}, id="find")),
            tool_calls(call(STATUS, {"widget": "w-4"}, id="s2")),
            answer_then_vanish,
            lambda request: seen.append(tool_messages(request)[-1]["content"]) or text("the server is gone"),
        )
        chat = await sync_to_async(services.start_chat)(member)
        await services.abegin_turn(chat.pk, "Check widgets w-4 and w-5")

        result = await Runtime().run_turn(chat.pk)

    assert result.status == "completed" and result.text == "the server is gone"
    assert seen[0] == GREEN.format("w-4")
    assert seen[1].startswith("Error: the MCP server 'widgets' is unavailable")
    assert (await AuditLog.objects.aget(tool_call_id="s3")).status == "error"


# --- stdio -------------------------------------------------------------------------------------


def test_an_org_admin_may_not_configure_a_stdio_server_even_when_stdio_is_allowed(
    org_admin, org, settings, tmp_path
):
    allow_stdio(settings, True)
    client = Client()
    client.force_login(org_admin)
    response = client.post(
        reverse("admin:ops_app_mcpserver_add"), add_form(command=stdio_command(tmp_path / "journal.txt"))
    )
    assert response.status_code == 200  # the form again, with the error
    assert "Only platform staff may configure an MCP server over stdio." in response.content.decode()
    assert not McpServer.objects.exists()
    assert not (tmp_path / "journal.txt").exists()


def test_platform_staff_configure_a_stdio_server_only_when_the_setting_allows_it(
    admin_user, org, settings, tmp_path
):
    client = Client()
    client.force_login(admin_user)
    form = add_form(organization=str(org.pk), command=stdio_command(tmp_path / "journal.txt"))

    allow_stdio(settings, False)
    refused = client.post(reverse("admin:ops_app_mcpserver_add"), form)
    assert "stdio servers are disabled on this Ongrid (ONGRID_MCP_ALLOW_STDIO)." in refused.content.decode()
    assert not McpServer.objects.exists()

    allow_stdio(settings, True)
    response = client.post(reverse("admin:ops_app_mcpserver_add"), form, follow=True)
    assert "widgets: 2 tools; new (write until marked read): restart_widget, widget_status" in [
        str(m) for m in response.context["messages"]
    ]
    server = McpServer.objects.get(organization=org)
    assert server.transport == "stdio"
    assert set(McpTool.objects.filter(server=server).values_list("name", flat=True)) == {
        "restart_widget",
        "widget_status",
    }


async def test_a_stdio_server_is_called_when_allowed_and_refused_once_the_setting_is_off(
    org,
    settings,
    tmp_path,
    close_async_db_connections,  # noqa: F811
):
    journal = tmp_path / "journal.txt"
    allow_stdio(settings, True)
    await sync_to_async(connect)(org, transport="stdio", command=stdio_command(journal))
    await McpTool.objects.filter(name="restart_widget").aupdate(tool_class="read")  # no review here
    tools = await organization_tools(org.pk)
    ctx = ToolContext(organization_id=org.pk, tool_call_id="x1")

    status = await invoke_tool(tools[STATUS], ctx, '{"widget": "w-8"}')
    restart = await invoke_tool(tools[RESTART], ctx, '{"widget": "w-8"}')

    assert (status.status, status.content) == ("ok", GREEN.format("w-8"))
    assert restart.status == "ok" and journal.read_text().splitlines() == ["restarted w-8"]

    # Platform staff turn stdio off: the stored server no longer runs (a tool error, not a crash).
    allow_stdio(settings, False)
    await McpServer.objects.filter(name="widgets").aupdate(timeout=25)  # a new session is opened
    tools = await organization_tools(org.pk)
    refused = await invoke_tool(tools[RESTART], ctx, '{"widget": "w-9"}')
    assert refused.status == "error" and "uses stdio, which is disabled on this Ongrid" in refused.content
    assert journal.read_text().splitlines() == ["restarted w-8"]
