"""The deferred tools of one agent run, and the `ToolSearch` tool that takes them off the shelf.

An agent with many tools (the coordinator with every read tool, an organization with dozens of MCP
tools) would send every schema on every model call. Deferred tools are named in ToolSearch's
description instead; their schemas reach the model only once it searched for them, and only then may
it call them (the kernel asks the shelf). docs/kernel.md, "Deferred tools and ToolSearch".
"""

from __future__ import annotations

import re
from collections import defaultdict

from agents_app.toolsets.contract import Tool, ToolContext, ToolError
from agents_app.toolsets.mcp.manifest import TOOL_PREFIX as MCP_PREFIX
from agents_app.toolsets.tool_search.manifest import TOOL_SEARCH

SELECT = "select:"
# A server with more MCP tools than this is listed as one `mcp__<server>__*` entry with a count.
LISTED_PER_SERVER = 6
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def _words(text: str) -> set[str]:
    """Lower-case words, also split at underscores and camel case (host_du_summary, ToolSearch),
    plurals folded (`logs` finds query_logql's "log lines", `incident` get_active_incidents)."""
    spaced = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text)
    return {_singular(word.lower()) for word in _WORD.findall(spaced)}


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


class Shelf:
    """Which of one run's tools are deferred, and which of those the model has loaded so far."""

    def __init__(
        self, tools: list[Tool], sent: frozenset[str] = frozenset(), warm: frozenset[str] = frozenset()
    ) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.sent = sent  # the run's tools whose schemas the model has had from the start
        # Everyday reads a persona's core_tools keeps off the request: a direct call runs and loads them.
        self.warm = warm & self.tools.keys()
        self.loaded: dict[str, Tool] = {}
        self._index = {tool.name: (_words(tool.name), _words(tool.description)) for tool in tools}

    def waiting(self, name: str) -> bool:
        """True for a deferred tool the model has not loaded yet: it may not be called."""
        return name in self.tools and name not in self.loaded and name not in self.warm

    def admit(self, tool: Tool) -> bool:
        """May a call to `tool` run now? A deferred one the model calls is loaded either way (its
        schema is sent from the next step); only a warm or already loaded one runs."""
        if tool.name not in self.tools:
            return True
        waiting = self.waiting(tool.name)
        self.load([tool])
        return not waiting

    def search(self, query: str, limit: int = 5) -> tuple[list[Tool], list[str]]:
        """The tools `query` finds (best first) and, for `select:`, the names that match none."""
        query = query.strip()
        if query.lower().startswith(SELECT):
            names = [name.strip() for name in query[len(SELECT) :].split(",") if name.strip()]
            found = [self.tools[name] for name in dict.fromkeys(names) if name in self.tools]
            return found, [name for name in names if name not in self.tools and name not in self.sent]
        wanted = _words(query)
        scored = []
        for position, (name, (name_words, text_words)) in enumerate(self._index.items()):
            score = 3 * len(wanted & name_words) + len(wanted & text_words)
            if score:
                scored.append((-score, position, name))
        return [self.tools[name] for _, _, name in sorted(scored)[:limit]], []

    def load(self, tools: list[Tool]) -> list[Tool]:
        """Mark `tools` loaded; returns the ones that were not loaded before (their schemas are new)."""
        new = [tool for tool in tools if tool.name not in self.loaded]
        self.loaded.update((tool.name, tool) for tool in new)
        return new

    def listing(self) -> str:
        """The deferred names as ToolSearch's description lists them (MCP servers grouped)."""
        plain: list[str] = []
        servers: dict[str, list[str]] = defaultdict(list)
        for name in self.tools:
            if name.startswith(MCP_PREFIX) and "__" in name[len(MCP_PREFIX) :]:
                servers[name[len(MCP_PREFIX) :].split("__", 1)[0]].append(name)
            else:
                plain.append(name)
        for server, names in servers.items():
            if len(names) > LISTED_PER_SERVER:
                plain.append(f"{MCP_PREFIX}{server}__* ({len(names)} tools)")
            else:
                plain.extend(names)
        return ", ".join(plain)


def tool_search_tool(shelf: Shelf) -> Tool:
    """The run's ToolSearch: its description names what is on `shelf`; a call loads what it finds."""

    async def tool_search(ctx: ToolContext, query: str, max_results: int = 5) -> dict:
        if not isinstance(query, str) or not query.strip():
            raise ToolError("give a query: keywords, or select:<name> for a tool you know by name")
        found, unknown = shelf.search(query, max(1, min(int(max_results), 10)))
        shelf.load(found)
        result: dict = {"tools": [tool.schema()["function"] for tool in found]}
        if unknown:
            result["unknown"] = unknown
        if found:
            result["note"] = "These tools are loaded: call them directly now."
        else:
            result["note"] = f"No deferred tool matches {query!r}. Deferred tools: {shelf.listing()}."
        return result

    description = f"{TOOL_SEARCH.description} Deferred tools: {shelf.listing()}."
    return Tool.from_spec(TOOL_SEARCH, tool_search, description=description)
