"""What `query_knowledge` and the incidents seen before ask: the organization's best passages for
a question, full-text and (when the organization has an embedding model) by meaning, fused.

`search` is the one entry point above the engines: callers never pick full-text or vectors
themselves, so every caller gets the same ranking, the same `why` and the same note when
semantic search is off or failed.

Hybrid ranking is reciprocal rank fusion: each passage gets sum(1 / (RRF_K + rank)) over the
full-text list and the vector list (RRF_K = 60, ranks from 1), so a passage both lists found
comes first and neither engine's scale matters. `score` keeps its meaning ("follow the runbook
at 0.6 or more"): the full-text score when full-text found the passage, else the cosine
calibrated as (cosine - 0.3) / 0.5 clipped to 0..1 (cosine 0.6 → 0.6, 0.8 or more → 1.0).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from django.utils.translation import gettext

from ops_app.knowledge import embeddings, vault, vectors
from ops_app.knowledge.embeddings import EmbeddingFailure
from ops_app.knowledge.vault import SNIPPET_CHARS, Hit

RRF_K = 60
CANDIDATES = 30  # per list
MIN_SEMANTIC_COSINE = 0.2  # below this a passage found by meaning alone is noise


@dataclass(frozen=True)
class Retrieval:
    """Ranked hits, how they were found (`mode`: "full-text" or "hybrid") and, when semantic
    search was not used or was limited, why (`note`, shown to the agent)."""

    hits: list[Hit] = field(default_factory=list)
    mode: str = "full-text"
    note: str = ""


def search(organization_id: int, query: str, top_k: int = 5, kinds: list[str] | None = None) -> Retrieval:
    """The organization's best passages for `query` (see the module docstring)."""
    embedder = embeddings.embedder_for(organization_id)
    if embedder is None:
        hits = vault.search(organization_id, query, top_k, kinds=kinds)
        return Retrieval(hits, "full-text", gettext("full-text only: no embedding model is configured"))
    textual = vault.search(organization_id, query, max(CANDIDATES, top_k), kinds=kinds)
    try:
        [vector] = embedder.embed(
            [query],
            vectors.stored_dimension(organization_id, embedder.model),
            timeout=embeddings.QUESTION_TIMEOUT,
        )
    except EmbeddingFailure as failure:
        embeddings.record_outcome(embedder.endpoint, failure.reason)
        note = gettext("full-text only: semantic search failed (%(reason)s)") % {"reason": failure.reason}
        return Retrieval(textual[:top_k], "full-text", note)
    found = vectors.nearest(
        organization_id, vector, max(CANDIDATES, top_k), embedder.model, vault.source_kinds_for(kinds)
    )
    semantic = [(pid, cosine) for pid, cosine in found.matches if cosine >= MIN_SEMANTIC_COSINE]
    note = ""
    if found.capped:
        note = gettext("semantic search compared the question with the newest %(count)s passages only") % {
            "count": vectors.MAX_SCANNED
        }
    return Retrieval(fuse(organization_id, textual, semantic)[:top_k], "hybrid", note)


def fuse(organization_id: int, textual: list[Hit], semantic: list[tuple[int, float]]) -> list[Hit]:
    """Reciprocal rank fusion of the full-text hits and the (passage id, cosine) vector matches."""
    scores: dict[int, float] = {}
    for rank, hit in enumerate(textual, start=1):
        scores[hit.passage_id] = scores.get(hit.passage_id, 0.0) + 1.0 / (RRF_K + rank)
    for rank, (passage_id, _) in enumerate(semantic, start=1):
        scores[passage_id] = scores.get(passage_id, 0.0) + 1.0 / (RRF_K + rank)
    by_text = {hit.passage_id: hit for hit in textual}
    cosines = dict(semantic)
    views = {v.id: v for v in vault.passage_views(organization_id, [p for p in cosines if p not in by_text])}
    fused: list[Hit] = []
    for passage_id in sorted(scores, key=lambda pid: (-scores[pid], pid)):
        hit = by_text.get(passage_id)
        if hit is not None:
            fused.append(dataclasses.replace(hit, why="both" if passage_id in cosines else "full-text"))
        elif passage_id in views:
            fused.append(_semantic_hit(views[passage_id], cosines[passage_id]))
    return fused


def calibrated(cosine: float) -> float:
    """A cosine on the full-text score's scale (see the module docstring)."""
    return round(max(0.0, min(1.0, (cosine - 0.3) / 0.5)), 3)


def _semantic_hit(view: vault.PassageView, cosine: float) -> Hit:
    flat = re.sub(r"\s+", " ", view.text).strip()
    excerpt = flat if len(flat) <= SNIPPET_CHARS else flat[:SNIPPET_CHARS] + "…"
    return Hit(
        view.document_id, view.title, view.source, view.source_kind, view.heading, calibrated(cosine),
        excerpt, view.id, view.url, view.language, why="semantic",
    )  # fmt: skip
