"""`query_knowledge`: retrieval over the organization's runbooks and uploaded documents."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from agents_app.tools.base import ToolContext, ToolError, tool
from ops_app.knowledge import vault as knowledge

FOLLOW_THRESHOLD = 0.6


@tool(
    "query_knowledge",
    "Search the organization's runbooks and uploaded documents. Returns ranked passages with the "
    f"document title, source, a score from 0 to 1 and a snippet. A score of {FOLLOW_THRESHOLD} or more "
    "means the passage covers the question well: follow that runbook and cite its title.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The question or symptoms, in plain words."},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)
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
