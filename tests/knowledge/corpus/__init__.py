"""A multilingual runbook corpus (en/es/fr/zh-hans) and labelled questions, for measuring
retrieval: `load_corpus(org)` puts the runbooks in the organization's vault, `questions(kinds)`
gives the questions with the runbook that answers each, and `measure` computes recall@3 and MRR.

Kinds: same-language, accents (written without the document's accents, or with accents it lacks),
chinese, typos, cross-language and paraphrase (the last two need semantic search)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ops_app.knowledge import vault
from ops_app.models import KnowledgeDocument

FOLDER = Path(__file__).resolve().parent
FULLTEXT_KINDS = ("same-language", "accents", "chinese", "typos")
SEMANTIC_KINDS = ("cross-language", "paraphrase")


@dataclass(frozen=True)
class Question:
    kind: str
    doc: str  # the answering runbook's source, e.g. "es/nginx-502.md"
    q: str


def files() -> list[Path]:
    return sorted(FOLDER.glob("*/*.md"))


def load_corpus(organization) -> dict[str, int]:
    """Ingest every runbook as a vault document (source "<lang>/<file>"). Returns source → id."""
    ids = {}
    for path in files():
        source = path.relative_to(FOLDER).as_posix()
        title, body = vault.title_of(path.read_text(encoding="utf-8"), fallback=path.stem)
        outcome = vault.ingest(
            organization, kind=KnowledgeDocument.Source.VAULT, source=source, title=title, content=body
        )
        ids[source] = outcome["document_id"]
    return ids


def questions(kinds: Iterable[str] | None = None) -> list[Question]:
    wanted = set(kinds) if kinds else None
    rows = json.loads((FOLDER / "questions.json").read_text(encoding="utf-8"))
    return [Question(**row) for row in rows if wanted is None or row["kind"] in wanted]


@dataclass(frozen=True)
class Measure:
    kind: str
    recall_at_3: float
    mrr: float
    misses: list[str]


def measure(ask: Callable[[str], list[str]], kinds: Iterable[str] | None = None) -> dict[str, Measure]:
    """recall@3 and MRR per kind; `ask(question)` returns the sources of the hits, best first."""
    by_kind: dict[str, list[tuple[Question, list[str]]]] = {}
    for question in questions(kinds):
        # Ranks count documents: several passages of one runbook are one answer.
        by_kind.setdefault(question.kind, []).append((question, list(dict.fromkeys(ask(question.q)))))
    results = {}
    for kind, answers in by_kind.items():
        found = [sources.index(q.doc) + 1 if q.doc in sources else 0 for q, sources in answers]
        results[kind] = Measure(
            kind,
            sum(1 for rank in found if 1 <= rank <= 3) / len(answers),
            sum(1 / rank for rank in found if rank) / len(answers),
            [
                f"{q.q!r} → {sources[:3]}"
                for (q, sources), rank in zip(answers, found, strict=True)
                if not 1 <= rank <= 3
            ],
        )
    return results
