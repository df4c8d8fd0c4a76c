"""The handler of `query_knowledge`: ranked passages with titles, sources and scores."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.knowledge.manifest import FOLLOW_THRESHOLD
from ops_app.knowledge import retrieval
from ops_app.knowledge import vault as knowledge

KINDS = ("runbook", "past-incident")


async def query_knowledge(ctx: ToolContext, query: str, top_k: int = 5, kind: str | None = None) -> dict:
    if not isinstance(query, str) or not query.strip():
        raise ToolError("query must be a non-empty question")
    try:
        top_k = int(top_k)
    except (TypeError, ValueError):
        raise ToolError("top_k must be an integer from 1 to 10") from None
    if not 1 <= top_k <= 10:
        raise ToolError("top_k must be from 1 to 10")
    if not knowledge.query_words(query):
        raise ToolError("the query has no searchable words; describe the symptoms or the system")
    if kind is not None and kind not in KINDS:
        raise ToolError(f"kind must be one of {', '.join(KINDS)}")
    found = await sync_to_async(retrieval.search)(
        ctx.organization_id, query, top_k, kinds=[kind] if kind else None
    )
    result = {
        "query": query,
        "mode": found.mode,
        "results": [
            {
                "title": hit.title,
                "source": hit.source,
                "url": hit.url,
                "kind": "past-incident" if hit.source_kind == "past-incident" else "runbook",
                "language": hit.language,
                "section": hit.heading,
                "score": hit.score,
                "why": hit.why,
                "passage": hit.passage,
                "document_id": hit.document_id,
            }
            for hit in found.hits
        ],
        "follow_threshold": FOLLOW_THRESHOLD,
    }
    if found.note:
        result["note"] = found.note
    return result
