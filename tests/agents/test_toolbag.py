"""Which tools an agent gets (R8, R9)."""

from __future__ import annotations

import logging

from agents_app.tools.toolbag import build_toolbag
from tests.support.agents import make_tool, persona


async def _noop(ctx, **arguments):
    return ""


AVAILABLE = {
    tool.name: tool
    for tool in [
        make_tool("query_incidents", _noop),
        make_tool("query_promql", _noop),
        make_tool("query_knowledge", _noop),
        make_tool("get_host_load", _noop, on_host=True),
        make_tool("host_du_summary", _noop, on_host=True),
        make_tool("host_restart_service", _noop, tool_class="write", on_host=True),
        make_tool("delete_silence", _noop, tool_class="destructive"),
        make_tool("AgentTool", _noop),
        make_tool("SendMessage", _noop),
        make_tool("TaskStop", _noop),
        make_tool("load_skill", _noop),
        make_tool("list_skill", _noop),
    ]
}


def names(tools):
    return [tool.name for tool in tools]


def test_absent_tools_means_the_coordinator_read_only_set():
    bag = build_toolbag(persona("default", tools=None), AVAILABLE, coordinator=True)
    assert names(bag) == [
        "query_incidents",
        "query_promql",
        "query_knowledge",
        "AgentTool",
        "SendMessage",
        "TaskStop",
        "load_skill",
        "list_skill",
    ]


def test_whitelist_wildcards_minus_blacklist_wildcards():
    who = persona(tools=("query_*", "host_*", "*_skill"), disallowed_tools=("*_skill", "query_knowledge"))
    bag = build_toolbag(who, AVAILABLE, coordinator=False)
    assert names(bag) == ["query_incidents", "query_promql", "host_du_summary"]


def test_workers_never_get_coordinator_tools_even_when_listed():
    who = persona(
        tools=("AgentTool", "SendMessage", "TaskStop", "query_promql"),
        permission_mode="mutating-with-confirm",
    )
    assert names(build_toolbag(who, AVAILABLE, coordinator=False)) == ["query_promql"]
    assert "AgentTool" in names(
        build_toolbag(persona("default", tools=("AgentTool",)), AVAILABLE, coordinator=True)
    )


def test_read_only_personas_never_get_mutating_tools():
    listed = ("host_restart_service", "delete_silence", "host_du_summary")
    assert names(build_toolbag(persona(tools=listed), AVAILABLE, coordinator=False)) == ["host_du_summary"]
    mutating = persona(tools=listed, permission_mode="mutating-with-confirm")
    assert names(build_toolbag(mutating, AVAILABLE, coordinator=False)) == [
        "host_du_summary",
        "host_restart_service",
        "delete_silence",
    ]


def test_unknown_names_are_ignored_with_a_warning(caplog):
    caplog.set_level(logging.WARNING, logger="agents_app.tools.toolbag")
    bag = build_toolbag(persona(tools=("query_promql", "no_such_tool")), AVAILABLE, coordinator=False)
    assert names(bag) == ["query_promql"]
    assert "no_such_tool" in caplog.text
