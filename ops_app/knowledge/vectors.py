"""Nearest passages by meaning: the one place a vector index plugs in.

Today this is an exact scan: the organization's passages embedded with the current model are read
(vectors only, in chunks) and scored by a pure-Python dot product; vectors are unit length, so the
dot product is the cosine. numpy is not installed, sqlite-vec cannot be loaded (this Python's
`sqlite3.Connection` has no `enable_load_extension`) and the PostgreSQL server has no pgvector
extension (`pg_available_extensions` has no `vector`). When either becomes available, only
`nearest` changes: same arguments, same answer.

The scan reads at most MAX_SCANNED passages per question (newest documents first); past that,
`Nearest.capped` is True and the search says so in its note.
"""

from __future__ import annotations

import heapq
from array import array
from dataclasses import dataclass, field
from operator import mul

from ops_app.knowledge.embeddings import from_bytes
from ops_app.models import KnowledgePassage

MAX_SCANNED = 20_000
_CHUNK = 2_000


@dataclass(frozen=True)
class Nearest:
    """(passage id, cosine) best first; `capped` when the scan stopped at MAX_SCANNED."""

    matches: list[tuple[int, float]] = field(default_factory=list)
    capped: bool = False


def nearest(
    organization_id: int,
    vector: array,
    limit: int,
    model: str,
    source_kinds: list[str] | None = None,
) -> Nearest:
    """The `limit` passages of the organization closest to `vector` among those embedded by
    `model` (and, when given, in documents of `source_kinds`)."""
    rows = KnowledgePassage.objects.filter(organization_id=organization_id, embedding_model=model)
    rows = rows.exclude(embedding=None)
    if source_kinds is not None:
        rows = rows.filter(document__source_kind__in=source_kinds)
    rows = rows.order_by("-document_id", "position").values_list("id", "embedding")
    best: list[tuple[float, int]] = []
    scanned = 0
    for passage_id, data in rows[: MAX_SCANNED + 1].iterator(chunk_size=_CHUNK):
        if scanned == MAX_SCANNED:
            return Nearest(_ordered(best), capped=True)
        scanned += 1
        stored = from_bytes(data)
        if len(stored) != len(vector):
            continue
        score = sum(map(mul, stored, vector))  # about twice a generator's speed
        if len(best) < limit:
            heapq.heappush(best, (score, -passage_id))
        elif score > best[0][0]:
            heapq.heapreplace(best, (score, -passage_id))
    return Nearest(_ordered(best))


def stored_dimension(organization_id: int, model: str) -> int | None:
    """The dimension of the organization's vectors made by `model` (None before the first one):
    what a new vector must have to be comparable."""
    data = (
        KnowledgePassage.objects.filter(organization_id=organization_id, embedding_model=model)
        .exclude(embedding=None)
        .values_list("embedding", flat=True)
        .first()
    )
    return len(bytes(data)) // 4 if data else None


def _ordered(best: list[tuple[float, int]]) -> list[tuple[int, float]]:
    return [(-neg_id, score) for score, neg_id in sorted(best, reverse=True)]
