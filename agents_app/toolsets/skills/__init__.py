"""The `Skill` tool: an agent loads an offered skill's body, or one of its files (docs/skills.md)."""
