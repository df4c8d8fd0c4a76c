"""The tools an organization's agents may be handed (docs/integrations.md): the built-in tools,
with the organization's data-source names written into the descriptions of the tools that take
a `datasource` argument (so the model can choose one), plus the tools its MCP servers expose.

Built once per turn / worker, from the organization of the session: one organization's data
source names and MCP tools never reach another's agents.
"""

from __future__ import annotations

import dataclasses

from agents_app.tools import replay
from agents_app.toolsets.contract import UNCONFIGURED, Tool
from agents_app.toolsets.mcp.tools import organization_mcp_tools
from agents_app.toolsets.registry import datasource_kinds, load_builtin_tools
from ops_app.core.turn_memo import remembered
from ops_app.integrations import datasources


def with_data_sources(tool: Tool, names: list[str]) -> Tool:
    """`tool` whose description names the organization's data sources of its kind (default first)."""
    if not names:
        return tool
    listing = f"{names[0]} (default)" + "".join(f", {name}" for name in names[1:])
    if "cluster" in tool.parameters.get("properties", {}):  # what the Kubernetes tools call theirs
        description = f"{tool.description} Clusters (`cluster`): {listing}."
    else:
        description = f"{tool.description} Data sources (`datasource`): {listing}."
    return dataclasses.replace(tool, description=description)


def unconfigured(tool: Tool, kind: str) -> Tool:
    """`tool` whose description says its back end is missing here, so no step is spent calling it
    (it stays listed: a persona naming it still loads, and a call still answers `not_configured`)."""
    variable = datasources.VARIABLE.get(kind)
    unset = f", {variable} unset" if variable else ""
    note = f"{UNCONFIGURED} (no {kind} data source{unset}): do not call it."
    return dataclasses.replace(tool, description=f"{tool.description} {note}")


async def organization_tools(organization_id: int) -> dict[str, Tool]:
    """Every tool available to the organization's agents, by name, built-ins first.

    A tool the organization's registered replay answers (an evaluation's throwaway organization,
    agents_app/tools/replay.py) counts as configured: its calls get the recordings, so telling the
    model not to call it would grade the note instead of the model. Built once per turn; each
    caller gets its own dict."""
    return dict(await remembered(("organization_tools", organization_id), lambda: _build(organization_id)))


async def _build(organization_id: int) -> dict[str, Tool]:
    available = load_builtin_tools()
    names = await datasources.anames(organization_id)
    replayed = replay.registered(organization_id)
    for name, kind in datasource_kinds().items():
        if name not in available:
            continue
        answered = replayed is not None and replayed.covers(name)
        if names.get(kind) or datasources.configured_in_environment(kind) or answered:
            available[name] = with_data_sources(available[name], names.get(kind, []))
        else:
            available[name] = unconfigured(available[name], kind)
    for name, tool in (await organization_mcp_tools(organization_id)).items():
        available.setdefault(name, tool)  # a built-in name always wins
    return available
