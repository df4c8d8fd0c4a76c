"""Every tool name a persona may list, derived from the toolsets' manifests.

Personas are validated against these names (a typo in a whitelist would silently leave a worker
without its tool); reading the manifests imports no tool implementation.
"""

from __future__ import annotations

from collections.abc import Iterable
from fnmatch import fnmatchcase

from agents_app.toolsets.mcp.manifest import TOOL_PREFIX as MCP_PREFIX
from agents_app.toolsets.registry import specs

__all__ = [
    "MCP_PREFIX",
    "control_tools",
    "expand",
    "known_tools",
    "read_tools",
    "unknown_tools",
    "write_tools",
]


def read_tools() -> tuple[str, ...]:
    return tuple(name for name, spec in specs().items() if spec.scope == "agents" and not spec.mutates)


def write_tools() -> tuple[str, ...]:
    return tuple(name for name, spec in specs().items() if spec.scope == "agents" and spec.mutates)


def control_tools() -> tuple[str, ...]:
    """The orchestration tools only the coordinator carries; workers never get them (docs/runtime.md)."""
    return tuple(name for name, spec in specs().items() if spec.scope == "coordinator")


def known_tools() -> frozenset[str]:
    return frozenset(read_tools() + write_tools() + control_tools())


def is_pattern(name: str) -> bool:
    return "*" in name


def expand(pattern: str, names: Iterable[str] | None = None) -> list[str]:
    """The names `pattern` selects: itself if it is a plain name, every match if it has `*`."""
    names = known_tools() if names is None else set(names)
    if not is_pattern(pattern):
        return [pattern] if pattern in names else []
    return sorted(name for name in names if fnmatchcase(name, pattern))


def unknown_tools(names: Iterable[str], *, allow_unmatched_patterns: bool = False) -> list[str]:
    """The entries of `names` that name no known tool.

    A plain name must be a known tool. A `*` pattern must match at least one known tool, unless
    `allow_unmatched_patterns` (used for blacklists, where a pattern that matches nothing today is
    harmless and may be written ahead of tools that arrive later). MCP tools (`mcp__<server>__<tool>`)
    are discovered per organization at run time, so any such name or pattern is accepted.
    """
    known = known_tools()
    bad = []
    for name in names:
        if name.startswith(MCP_PREFIX) and len(name) > len(MCP_PREFIX):
            continue
        if is_pattern(name):
            if not allow_unmatched_patterns and not expand(name, known):
                bad.append(name)
        elif name not in known:
            bad.append(name)
    return bad
