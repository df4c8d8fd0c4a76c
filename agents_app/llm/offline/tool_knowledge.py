"""What the offline model knows about particular tools, read from the toolsets' manifests.

Elsewhere the offline model reads tools only through their schemas (names, descriptions,
parameters); the few facts it needs beyond them are each tool's `offline` hints
(`agents_app/toolsets/manifest.py:OfflineHints`) and, for the reviewer, what its toolset reaches.
"""

from __future__ import annotations

from agents_app.toolsets.manifest import OfflineHints
from agents_app.toolsets.registry import backend_of, specs


def hints(name: str) -> OfflineHints:
    spec = specs().get(name)
    return spec.offline if spec is not None else OfflineHints()


def lookup_tools() -> list[tuple[str, frozenset[str]]]:
    """(tool, the nouns that name its records) of every look-up tool, in precedence order."""
    looked_up = [
        (s.offline.lookup_rank, i, s) for i, s in enumerate(specs().values()) if s.offline.lookup_words
    ]
    return [(s.name, s.offline.lookup_words) for _, _, s in sorted(looked_up)]


def open_variant(name: str) -> str | None:
    """The tool that lists only the open records of what look-up tool `name` lists, if any."""
    return next((s.name for s in specs().values() if s.offline.open_variant_of == name), None)


def is_auto_picked(name: str) -> bool:
    """Whether the offline model may choose `name` from a request's words (OfflineHints.auto_pick)."""
    return hints(name).auto_pick


def is_control_tool(name: str) -> bool:
    spec = specs().get(name)
    return spec is not None and spec.scope == "coordinator"


def is_approved_offline(name: str) -> bool:
    """The offline reviewer approves a held call of a write that changes only Ongrid's own records."""
    return backend_of(name) == "ongrid" and specs()[name].mutates


def tool_for(role: str) -> str:
    """The tool that plays `role` (one of the ROLE_* names of the manifest)."""
    return next(s.name for s in specs().values() if s.offline.role == role)
