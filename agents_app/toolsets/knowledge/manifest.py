from agents_app.toolsets.manifest import Toolset, ToolSpec

FOLLOW_THRESHOLD = 0.6

QUERY_KNOWLEDGE = ToolSpec(
    "query_knowledge",
    "Search runbooks, uploads and past incidents, in any language: ranked passages with title, "
    f"source, language, a 0–1 score and why they matched. A score of {FOLLOW_THRESHOLD} or more "
    "covers the question: follow that runbook and cite its title.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The question or symptoms."},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5},
            "kind": {
                "type": "string",
                "enum": ["runbook", "past-incident"],
                "description": "Only runbooks and uploads, or only past incidents.",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    core=True,
)

TOOLSET = Toolset(
    "knowledge", "The knowledge vault: runbooks and uploads", (QUERY_KNOWLEDGE,), backend="ongrid"
)
