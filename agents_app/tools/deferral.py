"""Which of an agent's tools the model is sent at once, and which wait behind ToolSearch.

Every tool schema is sent on every model call, so an agent with many tools pays for all of them on
each step. Past ONGRID_DEFERRED_TOOLS_ABOVE tools, only the core ones (the control tools, the tools
bound for the run, the reads most turns start with, or the persona's own `core_tools`) are sent with
`ToolSearch`; the rest are named in ToolSearch's description and loaded when the model asks.
The toolsets' everyday reads that a persona's `core_tools` leaves out are deferred too, but warm: a
direct call runs (its arguments checked as always) and loads the schema. Redirect stubs are not
offered, deferring or not (a stub's schema would advertise the very call it exists to catch, and the
catalog already says whom to dispatch), but a call to one still redirects. docs/kernel.md,
"Deferred tools and ToolSearch".
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from agents_app.personas.schema import Persona, matches_any
from agents_app.toolsets.contract import Tool
from agents_app.toolsets.registry import spec
from agents_app.toolsets.tool_search.manifest import TOOL_SEARCH
from agents_app.toolsets.tool_search.shelf import Shelf, tool_search_tool


@dataclass(frozen=True)
class ToolPlan:
    offered: list[Tool]  # sent to the model from the first step
    callable: dict[str, Tool]  # what a call may name (deferred ones once loaded; stubs always)
    shelf: Shelf | None = None  # None: nothing is deferred


def plan_tools(persona: Persona, tools: list[Tool], *, sees_every_tool: bool = False) -> ToolPlan:
    """Split `tools` for one run of `persona` (`sees_every_tool`: a provider that gets them all)."""
    by_name = {tool.name: tool for tool in tools}
    real = [tool for tool in tools if not tool.redirect]
    config = settings.CONFIG
    if sees_every_tool or not config.tool_search:
        return ToolPlan(list(tools), by_name)
    if len(real) <= config.deferred_tools_above:
        return ToolPlan(real, by_name)  # stubs stay callable, unadvertised
    core: list[Tool] = []
    deferred: list[Tool] = []
    for tool in real:
        (core if is_core(tool, persona) else deferred).append(tool)
    if not deferred:
        return ToolPlan(real, by_name)
    warm = frozenset(tool.name for tool in deferred if tool.core)  # left out by the persona's core_tools
    shelf = Shelf(deferred, frozenset(tool.name for tool in core), warm)
    search = tool_search_tool(shelf)
    return ToolPlan([*core, search], {**by_name, search.name: search}, shelf)


def is_core(tool: Tool, persona: Persona) -> bool:
    """Sent at once: the persona's `core_tools` when it lists them, else the toolsets' choice;
    a tool bound for the run or for the coordinator always."""
    if persona.core_tools is None:
        return tool.core
    declared = spec(tool.name)
    structural = declared is not None and declared.scope != "agents"
    return structural or matches_any(tool.name, persona.core_tools)


def counts_against_budget(name: str) -> bool:
    """ToolSearch only reads schemas: it is not one of the persona's `max_tool_calls`."""
    return name != TOOL_SEARCH.name
