"""Every tool name a persona may list, as data.

Personas are validated against these names (a typo in a whitelist would silently leave a worker
without its tool). The tools themselves are declared elsewhere (`agents_app/tools/`); this list is
kept as plain data so persona validation does not import the tool implementations, and a test at
integration checks the two agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

READ_TOOLS: tuple[str, ...] = (
    "query_promql",
    "query_logql",
    "query_traceql",
    "query_incidents",
    "get_incident_detail",
    "get_active_incidents",
    "query_alert_rules",
    "query_devices",
    "query_change_events",
    "expand_topology",
    "find_topology_node",
    "correlate_incident",
    "query_knowledge",
    "get_host_load",
    "get_host_processes",
    "host_du_summary",
    "host_find_large_files",
    "host_stat_file",
    "host_probe_http",
    "host_probe_dns",
    "host_probe_tcp",
    "host_bash",
)
WRITE_TOOLS: tuple[str, ...] = (
    "host_restart_service",
    "acknowledge_incident",
    "resolve_incident",
    "create_silence",
)
# Orchestration tools only the coordinator carries; workers never get them (docs/runtime.md).
CONTROL_TOOLS: tuple[str, ...] = ("AgentTool", "SendMessage", "TaskStop")

KNOWN_TOOLS: frozenset[str] = frozenset(READ_TOOLS + WRITE_TOOLS + CONTROL_TOOLS)
# Tools of an organization's MCP servers (docs/integrations.md): `mcp__<server>__<tool>`. They are
# discovered at run time, per organization, so any such name or pattern is accepted here; the
# toolbag keeps the ones the organization actually has.
MCP_PREFIX = "mcp__"


def is_pattern(name: str) -> bool:
    return "*" in name


def expand(pattern: str, names: Iterable[str] = KNOWN_TOOLS) -> list[str]:
    """The names `pattern` selects: itself if it is a plain name, every match if it has `*`."""
    if not is_pattern(pattern):
        return [pattern] if pattern in set(names) else []
    return sorted(name for name in names if fnmatchcase(name, pattern))


def unknown_tools(names: Iterable[str], *, allow_unmatched_patterns: bool = False) -> list[str]:
    """The entries of `names` that name no known tool.

    A plain name must be a known tool. A `*` pattern must match at least one known tool, unless
    `allow_unmatched_patterns` (used for blacklists, where a pattern that matches nothing today is
    harmless and may be written ahead of tools that arrive later).
    """
    bad = []
    for name in names:
        if name.startswith(MCP_PREFIX) and len(name) > len(MCP_PREFIX):
            continue
        if is_pattern(name):
            if not allow_unmatched_patterns and not expand(name):
                bad.append(name)
        elif name not in KNOWN_TOOLS:
            bad.append(name)
    return bad
