from agents_app.toolsets.manifest import ROLE_DISPATCH, OfflineHints, Toolset, ToolSpec

AGENT_TOOL = ToolSpec(
    "AgentTool",
    "Dispatch a specialist for deep work (5+ inspection calls, host-side tools, several hosts or "
    "signals); returns its answer.",
    {
        "type": "object",
        "properties": {
            "description": {
                "type": "string",
                "description": "One line, shown on the tile.",
            },
            "subagent_type": {"type": "string"},
            "prompt": {
                "type": "string",
                "description": "The whole brief (the worker cannot see this chat): ids, names, times, "
                "the user's words.",
            },
        },
        "required": ["description", "subagent_type", "prompt"],
    },
    timeout=900.0,
    scope="coordinator",
    offline=OfflineHints(role=ROLE_DISPATCH),
)
SEND_MESSAGE = ToolSpec(
    "SendMessage",
    "Tell the user something without ending the turn.",
    {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    scope="coordinator",
)
TASK_STOP = ToolSpec(
    "TaskStop",
    "Stop a running worker by its task_id.",
    {"type": "object", "properties": {"task_id": {"type": "integer"}}, "required": ["task_id"]},
    scope="coordinator",
)

TOOLSET = Toolset(
    "control",
    "The coordinator's orchestration tools",
    (AGENT_TOOL, SEND_MESSAGE, TASK_STOP),
    backend="runtime",
    handlers=(),
)
