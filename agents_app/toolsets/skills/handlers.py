"""The `Skill` tool of one agent run: it loads only the skills that run was offered, so another
organization's skills, or skills its persona may not see, cannot be named into it (docs/skills.md).

Toolsets are the bottom layer of agents_app: the skills themselves (files, rows, who sees what) are
the personas layer's, handed in by the runtime as a `SkillLibrary`.
"""

from __future__ import annotations

from typing import Protocol

from asgiref.sync import sync_to_async

from agents_app.toolsets.contract import Tool, ToolContext, ToolError
from agents_app.toolsets.skills.manifest import SKILL_TOOL


class SkillLibrary(Protocol):
    """The skills one agent run may load (agents_app.personas.skills.SkillOffer)."""

    def names(self) -> list[str]: ...

    def instructions(self, name: str) -> str | None: ...

    def files(self, name: str) -> list[str]:
        """The skill's extra files (may read the disk)."""
        ...

    def read(self, name: str, file: str) -> str:
        """One extra file's text; raises ValueError with a message the model can act on."""
        ...


def skill_tool(library: SkillLibrary) -> Tool | None:
    """The tool loading `library`'s skills; None when it has none (the agent gets no tool at all)."""
    if not library.names():
        return None

    async def load_skill(ctx: ToolContext, name: str, file: str | None = None) -> dict:
        name = name.strip() if isinstance(name, str) else ""
        body = library.instructions(name)
        if body is None:
            choices = ", ".join(library.names())
            raise ToolError(f"no skill named {name!r} is offered to you; choose one of: {choices}")
        if file:
            try:
                text = await sync_to_async(library.read)(name, file)
            except ValueError as exc:
                raise ToolError(str(exc)) from None
            return {"skill": name, "file": file, "content": text}
        result = {"skill": name, "instructions": body}
        files = await sync_to_async(library.files)(name)
        if files:
            result["files"] = files
        return result

    return Tool.from_spec(SKILL_TOOL, load_skill)
