from agents_app.toolsets.manifest import OfflineHints, Toolset, ToolSpec

# Bound per agent run by the kernel (scope "run") when the agent has more tools than
# ONGRID_DEFERRED_TOOLS_ABOVE: their schemas stay off the request until this tool finds them.
TOOL_SEARCH = ToolSpec(
    "ToolSearch",
    "Load deferred tools by keywords ('disk usage') or select:<name>,<name>; call one only once "
    "loaded, then for the rest of this task.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Keywords, or select:<name>,<name>."},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    scope="run",
    offline=OfflineHints(auto_pick=False),
)

TOOLSET = Toolset(
    "tool_search",
    "ToolSearch: tool schemas loaded on demand",
    (TOOL_SEARCH,),
    backend="runtime",
    handlers=(),
)
