from agents_app.toolsets.manifest import OfflineHints, Toolset, ToolSpec

# Bound per agent run by the runtime (scope "run"): only an agent that is offered skills carries
# it, with the names it may load, so an agent without skills sends no extra tool schema.
SKILL_TOOL = ToolSpec(
    "Skill",
    "Load one of the skills listed in your system prompt: returns its instructions (and the files "
    "it has). Call it when a skill's description matches your task, before doing the task; pass "
    "`file` to read one of the skill's files the instructions refer to.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The skill's name, as the catalog lists it."},
            "file": {"type": "string", "description": "Optional: a file of the skill, like 'reference.md'."},
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
