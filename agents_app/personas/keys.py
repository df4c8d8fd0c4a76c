"""The front-matter keys of a persona file, in snake_case and in their export order: one list
for the schema (which reads and writes them) and the Claude Code reader (which maps their camelCase
spellings onto them), neither of which may import the other first."""

KNOWN_KEYS = (
    "name",
    "description",
    "when_to_use",
    "tools",
    "disallowed_tools",
    "permission_mode",
    "max_turns",
    "max_tool_calls",
    "model",
    "critical_reminder",
    "skills",
)
