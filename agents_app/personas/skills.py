"""Which skills an agent sees, which are active, and how an offered one is read (docs/skills.md).

Sources, lowest first: the built-in `skills/` directory, each mounted directory's `skills/`
(both in `registry.get_skill_registry()`), then the enabled `UserSkill` rows of the agent's
organization (a row shadows a file skill of the same name, and only that organization sees it).

Activation:
- a persona's `skills:` list and every visible `always: true` skill are *active*: their bodies go
  into the system prompt under `[能力: name]`;
- every other visible skill is *offered*: one catalog line (name — description) in the system
  prompt and its body on demand through the `Skill` tool, so many skills cost few tokens.
A persona's `skills_available` (names or `*` patterns) narrows what it sees; `[]` means none, and
the reviewer sees none unless its file says otherwise (its judgement must not drift with whatever
skills an organization installs). An agent with nothing offered gets no catalog and no tool.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from asgiref.sync import sync_to_async

from agents_app.personas.schema import REVIEWER, Persona, Skill, matches_any

log = logging.getLogger(__name__)

SKILL_FILE = "SKILL.md"
MAX_SKILL_FILE_BYTES = 256 * 1024
# The catalog is a page at most: past it, the remaining skills are named only (still loadable).
CATALOG_BUDGET_BYTES = 4 * 1024
CATALOG_HEADER = "Skills you can load with the Skill tool (name — what it is for):"


class SkillFileError(ValueError):
    """An extra file of a skill that cannot be handed out (missing, outside the skill, too big)."""


@dataclass(frozen=True)
class SkillOffer:
    """What one agent gets: active skills (bodies in the prompt) and offered ones (catalog + tool)."""

    active: tuple[Skill, ...] = ()
    offered: Mapping[str, Skill] = field(default_factory=dict)

    @property
    def catalog(self) -> str:
        return render_catalog(self.offered.values())

    # What the `Skill` tool reads (agents_app.toolsets.skills.handlers.SkillLibrary).
    def names(self) -> list[str]:
        return list(self.offered)

    def instructions(self, name: str) -> str | None:
        skill = self.offered.get(name)
        return skill.body if skill is not None else None

    def files(self, name: str) -> list[str]:
        return skill_files(self.offered[name])

    def read(self, name: str, file: str) -> str:
        return read_skill_file(self.offered[name], file)


# ---------------------------------------------------------------------------------------------
# Reading a skills directory (single `.md` files and `<name>/SKILL.md` folders)


def skill_paths(root: Path) -> list[Path]:
    """The skill files under `root`, sorted: every `SKILL.md`, and every other `.md` that is not
    inside a skill folder (those are the folder's extra files) and is not a README."""
    folders = {path.parent for path in root.rglob(SKILL_FILE) if path.is_file()}
    found = []
    for path in root.rglob("*.md"):
        if not path.is_file() or path.is_symlink():
            continue
        if path.name == SKILL_FILE:
            found.append(path)
            continue
        if path.name.lower() == "readme.md" or any(parent in folders for parent in path.parents):
            continue
        found.append(path)
    return sorted(found)


# ---------------------------------------------------------------------------------------------
# Extra files


def clean_name(name: str) -> PurePosixPath:
    """A relative path inside the skill, or SkillFileError: no absolute paths, no `..`."""
    if not isinstance(name, str) or not name.strip() or "\x00" in name or "\\" in name:
        raise SkillFileError("give the file's path relative to the skill, like 'reference.md'")
    relative = PurePosixPath(name.strip())
    if relative.is_absolute() or ".." in relative.parts:
        raise SkillFileError("the file must be inside the skill's folder")
    return relative


def skill_files(skill: Skill) -> list[str]:
    """The extra files an agent may read, relative to the skill (for the tool's answer)."""
    if skill.folder is None:
        return sorted(skill.files)
    root = Path(skill.folder)
    names = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.name != SKILL_FILE:
            names.append(path.relative_to(root).as_posix())
    return names[:100]


def read_skill_file(skill: Skill, name: str) -> str:
    """One extra file of `skill` as text; refuses paths outside it, symlinks, big or binary files."""
    relative = clean_name(name)
    if skill.folder is None:
        text = skill.files.get(relative.as_posix())
        if not isinstance(text, str):
            raise SkillFileError(f"skill {skill.name!r} has no file {relative.as_posix()!r}")
        return text
    root = Path(skill.folder).resolve()
    path = root
    for part in relative.parts:
        path = path / part
        if path.is_symlink():
            raise SkillFileError("symbolic links are not read")
    resolved = path.resolve()
    if root not in resolved.parents or not resolved.is_file() or resolved.name == SKILL_FILE:
        raise SkillFileError(f"skill {skill.name!r} has no file {relative.as_posix()!r}")
    if resolved.stat().st_size > MAX_SKILL_FILE_BYTES:
        raise SkillFileError(f"the file is larger than {MAX_SKILL_FILE_BYTES // 1024} KB")
    try:
        return resolved.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SkillFileError("the file is not text (UTF-8)") from None
    except OSError:
        raise SkillFileError(f"skill {skill.name!r}: the file cannot be read") from None


# ---------------------------------------------------------------------------------------------
# Per-organization skills (UserSkill rows), cached per registry version


_lock = threading.Lock()
_org_cache: dict[int, tuple[int, dict[str, Skill]]] = {}


def _org_skills(organization_id: int | None, version: int | None = None) -> dict[str, Skill]:
    """The organization's enabled skills; read again only when its registry version moved
    (`version` when the caller has read it already)."""
    if organization_id is None:
        return {}
    from agents_app.models import RegistryVersion, UserSkill

    if version is None:
        version = RegistryVersion.current(organization_id)
    cached = _org_cache.get(organization_id)
    if cached is not None and cached[0] == version:
        return cached[1]
    rows = UserSkill.objects.filter(organization_id=organization_id, enabled=True).order_by("name")
    skills = {row.name: row.to_skill() for row in rows}
    with _lock:
        _org_cache[organization_id] = (version, skills)
    return skills


def available_skills(organization_id: int | None, version: int | None = None) -> dict[str, Skill]:
    """Every skill an agent of `organization_id` could see: files, then that organization's rows."""
    from agents_app.personas.registry import get_skill_registry

    merged = {skill.name: skill for skill in get_skill_registry().all()}
    merged.update(_org_skills(organization_id, version))
    return merged


def find_skill(organization_id: int | None, name: str) -> Skill | None:
    return available_skills(organization_id).get(name)


def visible(persona: Persona, skill: Skill) -> bool:
    """May `persona` be offered `skill`? Its `skills_available` decides; by default all (reviewer: none)."""
    allowed = persona.skills_available
    if allowed is None:
        return persona.name != REVIEWER
    return matches_any(skill.name, allowed)


def offer_for(persona: Persona, organization_id: int | None, version: int | None = None) -> SkillOffer:
    """The skills `persona` runs with in `organization_id` (synchronous: it may query the database)."""
    skills = available_skills(organization_id, version)
    listed = [skills[name] for name in persona.skills if name in skills]
    listed_names = {skill.name for skill in listed}
    seen = [skill for name, skill in sorted(skills.items()) if visible(persona, skill)]
    always = [skill for skill in seen if skill.always and skill.name not in listed_names]
    active = (*listed, *always)
    active_names = {skill.name for skill in active}
    offered = {skill.name: skill for skill in seen if skill.name not in active_names}
    return SkillOffer(active=active, offered=offered)


async def aoffer_for(persona: Persona, organization_id: int | None) -> SkillOffer:
    """`offer_for` from the event loop, with the registry version read once per turn."""
    from agents_app.models import RegistryVersion

    version = await RegistryVersion.acurrent(organization_id) if organization_id is not None else None
    return await sync_to_async(offer_for)(persona, organization_id, version)


def render_catalog(skills: Iterable[Skill], budget: int = CATALOG_BUDGET_BYTES) -> str:
    """One line per offered skill (name — description); names only once the budget is spent."""
    lines = [CATALOG_HEADER]
    used = len(CATALOG_HEADER.encode())
    skipped: list[str] = []
    for skill in skills:
        line = f"- {skill.name} — {' '.join(skill.description.split())}"
        size = len(line.encode()) + 1
        if skipped or used + size > budget:
            skipped.append(skill.name)
            continue
        lines.append(line)
        used += size
    if len(lines) == 1 and not skipped:
        return ""
    if skipped:
        lines.append("Also: " + ", ".join(skipped) + ".")
    return "\n".join(lines)


def forget() -> None:
    """Drop the cached organization skills (tests, the reload command)."""
    with _lock:
        _org_cache.clear()
