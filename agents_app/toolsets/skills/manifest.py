from agents_app.toolsets.manifest import OfflineHints, Toolset, ToolSpec

# Bound per agent run by the runtime (scope "run"): only an agent that is offered skills carries
# it, with the names it may load, so an agent without skills sends no extra tool schema.
SKILL_TOOL = ToolSpec(
    "Skill",
    "Load a skill your prompt lists when it fits the task, before doing it: its instructions and "
    "files; `file` reads one of them.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "file": {"type": "string", "description": "Such as reference.md."},
        },
        "required": ["name"],
        "additionalProperties": False,
    },
    scope="run",
    offline=OfflineHints(auto_pick=False),
)

TOOLSET = Toolset(
    "skills",
    "Skills: instructions an agent loads on demand",
    (SKILL_TOOL,),
    backend="runtime",
    handlers=(),
)
