"""The handler of `query_knowledge`: ranked passages with titles, sources and scores."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.knowledge.manifest import FOLLOW_THRESHOLD
from ops_app.knowledge import vault as knowledge


async def query_knowledge(ctx: ToolContext, query: str, top_k: int = 5) -> dict:
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
    hits = await sync_to_async(knowledge.search)(ctx.organization_id, query, top_k)
    return {
        "query": query,
        "results": [
            {
                "title": hit.title,
                "source": hit.source,
                "section": hit.heading,
                "score": hit.score,
                "snippet": hit.snippet,
                "document_id": hit.document_id,
            }
            for hit in hits
        ],
        "follow_threshold": FOLLOW_THRESHOLD,
    }
