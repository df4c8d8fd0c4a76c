"""The agent registry: which personas exist, for whom, right now.

Layers, lowest first (docs/personas.md):
1. the built-in files in `personas/`;
2. each `ONGRID_AGENTS_DIRS` directory, in order (a mounted `default.md` replaces the coordinator);
3. the enabled user agents of the caller's organization (database rows edited in the admin).

Layers 1–2 are one `AgentRegistry` per process, loaded on first use. Layer 3 is one small overlay
registry per organization whose parent is that shared file registry, so an organization's user
agent shadows a file persona of the same name and removing it reveals the file persona again.

Cross-process freshness (docs/personas.md): every write to a user agent bumps a per-organization counter row
(`RegistryVersion`) inside the same transaction. `get_registry(org)` reads that counter (one
primary-key lookup) and rebuilds the organization's overlay only when it differs from the version
the overlay was built at. So every daphne process and Celery worker sees an edit at its next
spawn, with no broadcast to miss and no restart; the process that made the edit also applies it
in place (`replace` / `remove`) as soon as the transaction commits.

Readers never lock: each registry keeps its contents in one immutable snapshot that writers
rebuild aside and swap in a single assignment, so a reader sees the old set or the new one,
never a half-loaded one.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from django.conf import settings

from agents_app.models import RegistryVersion, UserAgent
from agents_app.personas import skills as skill_sources
from agents_app.personas.schema import Persona, PersonaError, Skill, parse_persona, parse_skill, unknown_keys
from agents_app.toolsets import names as tool_names

log = logging.getLogger(__name__)

BUILTIN_PERSONAS_DIR = Path(settings.BASE_DIR) / "personas"
BUILTIN_SKILLS_DIR = Path(settings.BASE_DIR) / "skills"
SKILLS_SUBDIR = "skills"  # inside a mounted agents directory: skill files, not personas

T = TypeVar("T", Persona, Skill)


@dataclass(frozen=True)
class _Snapshot(Generic[T]):
    items: Mapping[str, T] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def _source_of(root: Path, builtin: Path) -> str:
    try:
        return "builtin" if root.resolve() == builtin.resolve() else "mounted"
    except OSError:
        return "mounted"


def _files(root: Path, skip_skills_dir: bool) -> list[Path]:
    """Every `.md` file under `root`, recursively, in sorted path order (the collision order)."""
    found = []
    for path in root.rglob("*.md"):
        relative = path.relative_to(root)
        if skip_skills_dir and relative.parts[0] == SKILLS_SUBDIR and len(relative.parts) > 1:
            continue
        if path.name.lower() == "readme.md" or not path.is_file():
            continue
        found.append(path)
    return sorted(found)


def _read_root(
    root: Path,
    parse: Callable[[str, str, str], T],
    source: str,
    paths: Callable[[Path], list[Path]],
    last_good: Mapping[str, T] | None = None,
) -> tuple[dict[str, T], list[str]]:
    """Parse every file of one root. Bad files and same-name files become warnings, never errors.

    `last_good` (path -> item) is what a hot reload had loaded: a file that stops parsing keeps
    that version, so a half-saved edit never makes a persona vanish from a running fleet."""
    items: dict[str, T] = {}
    warnings: list[str] = []
    if not root.is_dir():
        log.info("agents root %s does not exist; it contributes nothing", root)
        return items, warnings
    for path in paths(root):
        try:
            item = parse(path.read_text(encoding="utf-8"), source, str(path))
        except (PersonaError, OSError, UnicodeDecodeError) as exc:
            problem = str(exc) if isinstance(exc, PersonaError) else f"{path}: cannot be read ({exc})"
            item = (last_good or {}).get(str(path))
            if item is None:
                warnings.append(problem)
                continue
            warnings.append(f"{problem} (the last version that parsed stays loaded)")
        if item.name in items:
            kept = items[item.name].path
            warnings.append(f"two files are named {item.name!r}: {kept} and {path}; using {kept}")
            continue
        items[item.name] = item
    return items, warnings


class _FileRegistry(Generic[T]):
    """Named items loaded from directory trees, swapped atomically."""

    builtin_dir: Path = BUILTIN_PERSONAS_DIR
    skip_skills_dir = True

    def __init__(self) -> None:
        self._snapshot: _Snapshot[T] = _Snapshot()
        self._write_lock = threading.Lock()

    def _parse(self, text: str, source: str, path: str) -> T:
        raise NotImplementedError

    def _lint(self, item: T) -> list[str]:
        return []

    def _paths(self, root: Path) -> list[Path]:
        """The files of one root this registry reads."""
        return _files(root, self.skip_skills_dir)

    def _read(
        self, root: Path | str, last_good: Mapping[str, T] | None = None
    ) -> tuple[dict[str, T], list[str]]:
        root = Path(root)
        source = _source_of(root, self.builtin_dir)
        items, warnings = _read_root(root, self._parse, source, self._paths, last_good)
        for item in items.values():
            warnings.extend(self._lint(item))
        return items, warnings

    @staticmethod
    def _overlay(base: dict[str, T], items: dict[str, T], root: Path | str) -> dict[str, T]:
        merged = dict(base)
        for name, item in items.items():
            if name in merged:
                log.info("%s overrides %s (%s) with %s", root, name, merged[name].path, item.path)
            merged[name] = item
        return merged

    def load(self, root: Path | str) -> None:
        """Add the files under `root` on top of what is loaded (a later root wins a name)."""
        items, warnings = self._read(root)
        with self._write_lock:
            current = self._snapshot
            merged = self._overlay(dict(current.items), items, root)
            self._snapshot = _Snapshot(merged, current.warnings + tuple(warnings))

    def reload(self, *roots: Path | str, keep_last_good: bool = False) -> None:
        """Replace everything with the files of `roots` (later roots win), in one swap.

        With `keep_last_good` (a hot reload), a file that no longer parses keeps the version
        loaded now instead of disappearing; the warning says so."""
        last_good = {item.path: item for item in self._snapshot.items.values()} if keep_last_good else None
        merged: dict[str, T] = {}
        warnings: list[str] = []
        for root in roots:
            items, root_warnings = self._read(root, last_good)
            merged = self._overlay(merged, items, root)
            warnings.extend(root_warnings)
        with self._write_lock:
            self._snapshot = _Snapshot(merged, tuple(warnings))

    def _own(self, name: str) -> T | None:
        return self._snapshot.items.get(name)

    def by_name(self, name: str) -> T | None:
        return self._own(name)

    def all(self) -> list[T]:
        """Every item, ordered by name."""
        items = self._snapshot.items
        return [items[name] for name in sorted(items)]

    def warnings(self) -> list[str]:
        return list(self._snapshot.warnings)


class SkillRegistry(_FileRegistry[Skill]):
    """Skills: single `skills/**/*.md` files and `<name>/SKILL.md` folders (docs/skills.md)."""

    builtin_dir = BUILTIN_SKILLS_DIR
    skip_skills_dir = False

    def _parse(self, text: str, source: str, path: str) -> Skill:
        folder = str(Path(path).parent) if Path(path).name == skill_sources.SKILL_FILE else None
        return parse_skill(text, source, path, folder=folder)

    def _paths(self, root: Path) -> list[Path]:
        """Single `.md` skills and `<name>/SKILL.md` folders: a folder's other files are the
        skill's extra files, not skills of their own."""
        return skill_sources.skill_paths(root)


class AgentRegistry(_FileRegistry[Persona]):
    """Personas by name. An overlay registry (`parent` set) shadows its parent's personas."""

    def __init__(
        self,
        parent: AgentRegistry | None = None,
        skills: Callable[[], SkillRegistry] | None = None,
    ) -> None:
        super().__init__()
        self._parent = parent
        self._skills = skills or get_skill_registry

    def _parse(self, text: str, source: str, path: str) -> Persona:
        return parse_persona(text, source, path)

    def _lint(self, persona: Persona) -> list[str]:
        """Problems that do not stop a persona from loading but that an admin should see."""
        where = persona.path or f"{persona.source} agent {persona.name}"
        notes = []
        if persona.extra:
            notes.append(f"{where}: unknown key(s) kept but unused: {', '.join(unknown_keys(persona))}")
        unknown = tool_names.unknown_tools(persona.tools or ())
        unknown += tool_names.unknown_tools(persona.disallowed_tools, allow_unmatched_patterns=True)
        unknown += tool_names.unknown_tools(persona.core_tools or ())
        if unknown:
            notes.append(f"{where}: unknown tool(s): {', '.join(unknown)}")
        skills = self._skills()
        missing = [name for name in persona.skills if skills.by_name(name) is None]
        if missing:
            notes.append(f"{where}: unknown skill(s): {', '.join(missing)}")
        return notes

    def by_name(self, name: str) -> Persona | None:
        own = self._own(name)
        if own is not None or self._parent is None:
            return own
        return self._parent.by_name(name)

    def all(self) -> list[Persona]:
        merged = {p.name: p for p in self._parent.all()} if self._parent else {}
        merged.update(self._snapshot.items)
        return [merged[name] for name in sorted(merged)]

    def warnings(self) -> list[str]:
        inherited = self._parent.warnings() if self._parent else []
        return inherited + list(self._snapshot.warnings)

    def replace(self, persona: Persona) -> None:
        """Upsert one persona live (user-agent edit, or a mounted coordinator override)."""
        with self._write_lock:
            current = self._snapshot
            items = dict(current.items)
            items[persona.name] = persona
            self._snapshot = _Snapshot(items, current.warnings)

    def remove(self, name: str) -> bool:
        """Drop this registry's persona `name`; a parent's persona of that name shows again."""
        with self._write_lock:
            current = self._snapshot
            if name not in current.items:
                return False
            items = dict(current.items)
            del items[name]
            self._snapshot = _Snapshot(items, current.warnings)
            return True

    def install(self, personas: Iterable[Persona], warnings: Iterable[str] = ()) -> None:
        """Swap in a whole new set of personas (how an organization's overlay is rebuilt)."""
        items = {p.name: p for p in personas}
        snapshot = _Snapshot(items, tuple(warnings))
        with self._write_lock:
            self._snapshot = snapshot

    def lint(self, persona: Persona) -> list[str]:
        return self._lint(persona)


# ---------------------------------------------------------------------------------------------
# Process-wide accessors


@dataclass
class _Overlay:
    registry: AgentRegistry
    version: int
    files_generation: int = 0


_lock = threading.RLock()  # re-entrant: loading personas consults the skill registry
_files_registry: AgentRegistry | None = None
_skill_registry: SkillRegistry | None = None
_overlays: dict[int, _Overlay] = {}
_files_generation = 0  # bumped by every hot reload: overlays built before it rebuild (their lint)


def mounted_dirs() -> list[Path]:
    return list(settings.CONFIG.agents_dirs)


def get_skill_registry() -> SkillRegistry:
    """Built-in skills overlaid with each mounted directory's `skills/` folder."""
    global _skill_registry
    if _skill_registry is None:
        with _lock:
            if _skill_registry is None:
                registry = SkillRegistry()
                registry.reload(BUILTIN_SKILLS_DIR, *(d / SKILLS_SUBDIR for d in mounted_dirs()))
                _skill_registry = registry
    return _skill_registry


def files_generation() -> int:
    """How many times this process has re-read its persona and skill files (hot reload)."""
    return _files_generation


def reload_files() -> int:
    """Re-read the built-in and mounted skills and personas aside and swap each set in with one
    assignment; return the new files generation.

    The registries are reloaded in place, so every organization's overlay (whose parent is the
    file registry) sees the new personas at once; the bumped generation makes each overlay
    rebuild on its next use, so its warnings (unknown skills, ...) are checked against the new
    files too. A file that stops parsing keeps its last good version. A turn already running
    holds its `Persona` object and is not affected."""
    global _files_generation
    with _lock:
        skills = get_skill_registry()
        skills.reload(BUILTIN_SKILLS_DIR, *(d / SKILLS_SUBDIR for d in mounted_dirs()), keep_last_good=True)
        personas = file_registry()
        personas.reload(BUILTIN_PERSONAS_DIR, *mounted_dirs(), keep_last_good=True)
        _files_generation += 1
        return _files_generation


def file_registry() -> AgentRegistry:
    """The built-in and mounted personas of this process (layers 1–2), loaded once."""
    global _files_registry
    if _files_registry is None:
        get_skill_registry()  # loaded first: persona warnings name unknown skills
        with _lock:
            if _files_registry is None:
                registry = AgentRegistry()
                registry.reload(BUILTIN_PERSONAS_DIR, *mounted_dirs())
                _files_registry = registry
    return _files_registry


def _overlay_for(organization_id: int, version: int, rows: Iterable) -> AgentRegistry:
    """Rebuild (or create) the organization's overlay from its enabled user-agent rows."""
    generation = _files_generation  # read before the files: a reload meanwhile rebuilds again
    base = file_registry()
    personas, warnings = [], []
    holder = _overlays.get(organization_id)
    registry = holder.registry if holder else AgentRegistry(parent=base)
    for row in rows:
        try:
            persona = row.to_persona()
        except PersonaError as exc:
            warnings.append(f"user agent {row.name!r}: {exc.message}; it is not available")
            continue
        personas.append(persona)
        warnings.extend(registry.lint(persona))
    registry.install(personas, warnings)
    with _lock:
        _overlays[organization_id] = _Overlay(registry, version, generation)
    return registry


def _fresh_overlay(organization_id: int, version: int) -> AgentRegistry | None:
    """The organization's overlay if it was built at `version` and at the current files generation."""
    holder = _overlays.get(organization_id)
    if holder is not None and holder.version == version and holder.files_generation == _files_generation:
        return holder.registry
    return None


def get_registry(organization_id: int | None = None) -> AgentRegistry:
    """The personas `organization_id` sees now. Cheap: one indexed query when nothing changed.

    Synchronous (it may query the database); from async code use `aget_registry`.
    """
    if organization_id is None:
        return file_registry()
    version = RegistryVersion.current(organization_id)
    fresh = _fresh_overlay(organization_id, version)
    if fresh is not None:
        return fresh
    rows = list(UserAgent.objects.filter(organization_id=organization_id, enabled=True).order_by("name"))
    return _overlay_for(organization_id, version, rows)


async def aget_registry(organization_id: int | None = None) -> AgentRegistry:
    """`get_registry` for the event loop: the same checks through Django's async ORM."""
    if organization_id is None:
        return file_registry()
    version = await RegistryVersion.acurrent(organization_id)
    fresh = _fresh_overlay(organization_id, version)
    if fresh is not None:
        return fresh
    rows = [
        row
        async for row in UserAgent.objects.filter(organization_id=organization_id, enabled=True).order_by(
            "name"
        )
    ]
    return _overlay_for(organization_id, version, rows)


def applied_in_process(organization_id: int) -> AgentRegistry | None:
    """The organization's overlay if this process has built one (for in-place edits)."""
    holder = _overlays.get(organization_id)
    return holder.registry if holder else None


def reset() -> None:
    """Forget everything loaded; the next call reads files and rows again (tests, reload command)."""
    global _files_registry, _skill_registry
    with _lock:
        _files_registry = None
        _skill_registry = None
        _overlays.clear()
    skill_sources.forget()
