"""The `Skill` tool of one agent run: the skills it was offered, nothing else (tenancy by construction)."""

from __future__ import annotations

from asgiref.sync import sync_to_async

from agents_app.personas.skills import SkillFileError, SkillOffer, read_skill_file, skill_files
from agents_app.toolsets.contract import Tool, ToolContext, ToolError
from agents_app.toolsets.skills.manifest import SKILL_TOOL


def skill_tool(offer: SkillOffer) -> Tool | None:
    """The tool loading `offer`'s offered skills; None when nothing is offered (no tool at all)."""
    if not offer.offered:
        return None
    offered = dict(offer.offered)

    async def load_skill(ctx: ToolContext, name: str, file: str | None = None) -> dict:
        skill = offered.get(name.strip()) if isinstance(name, str) else None
        if skill is None:
            raise ToolError(f"no skill named {name!r} is offered to you; choose one of: {', '.join(offered)}")
        if file:
            try:
                text = await sync_to_async(read_skill_file)(skill, file)
            except SkillFileError as exc:
                raise ToolError(str(exc)) from None
            return {"skill": skill.name, "file": file, "content": text}
        result = {"skill": skill.name, "instructions": skill.body}
        files = await sync_to_async(skill_files)(skill)
        if files:
            result["files"] = files
        return result

    return Tool.from_spec(SKILL_TOOL, load_skill)
