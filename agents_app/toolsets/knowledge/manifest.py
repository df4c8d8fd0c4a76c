from agents_app.toolsets.manifest import Toolset, ToolSpec

FOLLOW_THRESHOLD = 0.6

QUERY_KNOWLEDGE = ToolSpec(
    "query_knowledge",
    "Search the organization's runbooks, uploaded documents and past incidents, in any language. "
    "Returns ranked passages with the document title, source, language, a score from 0 to 1, the "
    f"matching passage and why it matched. A score of {FOLLOW_THRESHOLD} or more "
    "means the passage covers the question well: follow that runbook and cite its title.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The question or symptoms, in plain words."},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5},
            "kind": {
                "type": "string",
                "enum": ["runbook", "past-incident"],
                "description": "Only runbooks and uploads, or only past incidents' reports.",
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
