from agents_app.toolsets.manifest import ROLE_DISPATCH, OfflineHints, Toolset, ToolSpec

AGENT_TOOL = ToolSpec(
    "AgentTool",
    "Dispatch a specialist worker for deep work (5+ inspection calls, host-side tools, cross-host or "
    "cross-signal analysis). Blocks until the worker finishes and returns its answer.",
    {
        "type": "object",
        "properties": {
            "description": {
                "type": "string",
                "description": "One-line summary of the task, shown on the tile.",
            },
            "subagent_type": {"type": "string", "description": "Name of the specialist persona to dispatch."},
            "prompt": {
                "type": "string",
                "description": "The complete, self-contained brief. The worker cannot see this conversation: "
                "include ids, device names, times and the user's exact words.",
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
    "Send an intermediate message to the user without ending the turn.",
    {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
    scope="coordinator",
)
TASK_STOP = ToolSpec(
    "TaskStop",
    "Stop a running worker by its task_id (idempotent).",
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
