"""What installing a pack would do, worked out before anything is written (docs/packs.md, "The
preview").

The admin shows this to the person about to install, and `install` refuses exactly what it
refuses, so what was previewed is what gets installed. Every rule a user agent or a user skill
must pass is the one `user_agents` / `user_skills` already apply to rows written by hand; this
module only adds what is particular to packs: the reserved `reviewer`, the confirmation the
coordinator needs, names the organization already uses, and the diff of an upgrade.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field

import yaml
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from packaging.version import InvalidVersion, Version

from agents_app.models import Pack, PackRelease, UserAgent, UserSkill
from agents_app.packs.contents import AGENTS_DIR, MANIFEST, SIGNATURE, SKILLS_DIR, McpTemplate, PackContents
from agents_app.personas import registry, user_agents, user_skills
from agents_app.personas import skills as skill_sources
from agents_app.personas.schema import (
    COORDINATOR,
    REVIEWER,
    Persona,
    PersonaError,
    Skill,
    matches_any,
    persona_fields,
    persona_to_markdown,
)
from agents_app.toolsets import names as tool_names
from ops_app.models import McpServer

ADDED, REMOVED, CHANGED, UNCHANGED = "added", "removed", "changed", "unchanged"
AGENT, SKILL, MCP_SERVER = "agent", "skill", "mcp_server"
SOURCE_COMMIT = "source_commit"  # what a Git release's stored manifest adds: the commit fetched


@dataclass(frozen=True)
class PersonaPlan:
    """One persona of the pack as the preview shows it, with what deserves a second look."""

    name: str
    description: str
    tools: tuple[str, ...] | None  # as listed; None: the coordinator's read-only set
    disallowed_tools: tuple[str, ...]
    permission_mode: str
    import_notes: tuple[str, ...]
    write_tools: tuple[str, ...]  # the write/destructive tools it may reach
    dual_sign: bool
    overrides_file_persona: bool  # a built-in or mounted persona of that name exists
    is_coordinator: bool  # `default`: replacing it needs an org admin's explicit confirmation
    skills: tuple[str, ...] = ()

    @property
    def asks_for_writes(self) -> bool:
        return bool(self.write_tools)


@dataclass(frozen=True)
class SkillPlan:
    name: str
    description: str
    always: bool
    files: tuple[str, ...]  # the folder's other files


@dataclass(frozen=True)
class McpPlan:
    """An MCP server template: installed disabled, its headers left for the admin to fill."""

    name: str
    transport: str
    url: str
    headers: tuple[str, ...]
    timeout: float
    description: str = ""


@dataclass(frozen=True)
class Conflict:
    """A name the organization already uses for something this pack did not install."""

    kind: str  # AGENT, SKILL or MCP_SERVER
    name: str
    message: str


@dataclass(frozen=True)
class Change:
    """One persona, skill or MCP server across an upgrade (or a rollback)."""

    kind: str
    name: str
    status: str  # ADDED, REMOVED, CHANGED or UNCHANGED
    diff: str = ""  # unified diff of the persona file / skill text / server settings

    @property
    def kind_label(self) -> str:
        return kind_label(self.kind)

    @property
    def status_label(self) -> str:
        labels = {ADDED: _("added"), REMOVED: _("removed"), CHANGED: _("changed"), UNCHANGED: _("unchanged")}
        return labels[self.status]


@dataclass(frozen=True)
class Removals:
    """What an uninstall (or an upgrade that dropped them) removes."""

    agents: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()

    @property
    def total(self) -> int:
        return len(self.agents) + len(self.skills) + len(self.mcp_servers)

    def as_dict(self) -> dict[str, list[str]]:
        return {
            "agents": list(self.agents),
            "skills": list(self.skills),
            "mcp_servers": list(self.mcp_servers),
        }


@dataclass(frozen=True)
class Preview:
    """Everything the admin sees before confirming an install, an upgrade or a rollback."""

    name: str
    version: str
    description: str
    author: str
    homepage: str
    source_kind: str
    source_url: str
    source_ref: str
    source_path: str
    source_commit: str  # the Git commit a Git release came from ("" otherwise)
    signer: str  # "name (key id)" of the trusted key; "" when the pack is unsigned
    personas: tuple[PersonaPlan, ...]
    skills: tuple[SkillPlan, ...]
    mcp_servers: tuple[McpPlan, ...]
    other_files: tuple[str, ...]  # listed by the pack, not installed (README, LICENSE...)
    conflicts: tuple[Conflict, ...] = ()
    refusals: tuple[str, ...] = ()  # any of these blocks the install
    installed_version: str = ""  # the version installed now ("" for a first install)
    changes: tuple[Change, ...] = ()
    removals: Removals = field(default_factory=Removals)

    @property
    def signed(self) -> bool:
        return bool(self.signer)

    @property
    def blocked(self) -> bool:
        return bool(self.refusals)

    @property
    def is_upgrade(self) -> bool:
        return bool(self.installed_version)

    @property
    def direction(self) -> str:
        """install, upgrade, downgrade or reinstall: what this version is to the installed one."""
        if not self.installed_version:
            return "install"
        order = compare_versions(self.version, self.installed_version)
        return "upgrade" if order > 0 else "downgrade" if order < 0 else "reinstall"

    @property
    def direction_label(self) -> str:
        labels = {
            "install": _("first install"),
            "upgrade": _("upgrade"),
            "downgrade": _("downgrade"),
            "reinstall": _("same version again"),
        }
        return labels[self.direction]

    @property
    def source_label(self) -> str:
        return str(Pack.SourceKind(self.source_kind).label) if self.source_kind else ""

    @property
    def has_coordinator(self) -> bool:
        return any(persona.is_coordinator for persona in self.personas)

    @property
    def flagged(self) -> tuple[PersonaPlan, ...]:
        return tuple(p for p in self.personas if p.asks_for_writes or p.dual_sign or p.is_coordinator)

    @property
    def changed(self) -> tuple[Change, ...]:
        return tuple(change for change in self.changes if change.status != UNCHANGED)


def kind_label(kind: str) -> str:
    return {AGENT: _("agent"), SKILL: _("skill"), MCP_SERVER: _("MCP server")}[kind]


def compare_versions(first: str, second: str) -> int:
    """-1, 0 or 1: PEP 440 order when both versions parse (1.10 after 1.9), else as text."""
    try:
        left, right = Version(first), Version(second)
    except InvalidVersion:
        left, right = first, second  # type: ignore[assignment]
    return (left > right) - (left < right)


def preview(organization, contents: PackContents, *, release: PackRelease, user) -> Preview:
    """What installing `contents` (fetched as `release`) into `organization` would do for `user`."""
    manifest = contents.manifest
    installed = Pack.objects.filter(organization=organization, name=manifest.name).first()
    conflicts = tuple(_conflicts(organization, contents, installed))
    refusals = [*reserved_refusals(contents), *_coordinator_refusals(contents, user)]
    refusals += [conflict.message for conflict in conflicts]
    refusals += _invalid(organization, contents, installed, user)
    return Preview(
        name=manifest.name,
        version=manifest.version,
        description=manifest.description,
        author=manifest.author,
        homepage=manifest.homepage,
        source_kind=release.source_kind,
        source_url=release.source_url,
        source_ref=release.source_ref,
        source_path=release.source_path,
        source_commit=str((release.manifest or {}).get(SOURCE_COMMIT, "")),
        signer=release.signed_by,
        personas=tuple(persona_plan(persona) for persona in contents.personas),
        skills=tuple(_skill_plan(skill) for skill in contents.skills),
        mcp_servers=tuple(_mcp_plan(server) for server in manifest.mcp_servers),
        other_files=other_files(contents),
        conflicts=conflicts,
        refusals=tuple(dict.fromkeys(refusals)),
        installed_version=installed.version if installed else "",
        changes=tuple(_changes(installed, contents)) if installed else (),
        removals=_dropped(installed, contents) if installed else Removals(),
    )


def removals(pack: Pack) -> Removals:
    """What uninstalling `pack` removes: its agents, its skills, the MCP servers it added."""
    recorded = [server["name"] for server in pack.mcp_servers or []]
    existing = McpServer.objects.filter(organization_id=pack.organization_id, name__in=recorded)
    return Removals(
        agents=tuple(UserAgent.objects.filter(pack=pack).order_by("name").values_list("name", flat=True)),
        skills=tuple(UserSkill.objects.filter(pack=pack).order_by("name").values_list("name", flat=True)),
        mcp_servers=tuple(sorted(existing.values_list("name", flat=True))),
    )


# --- the pack's parts -------------------------------------------------------------------------


def persona_plan(persona: Persona) -> PersonaPlan:
    return PersonaPlan(
        name=persona.name,
        description=persona.description,
        tools=persona.tools,
        disallowed_tools=persona.disallowed_tools,
        permission_mode=persona.permission_mode,
        import_notes=persona.import_notes,
        write_tools=reachable_writes(persona),
        dual_sign=persona.permission_mode == "dual-sign-required",
        overrides_file_persona=registry.file_registry().by_name(persona.name) is not None,
        is_coordinator=persona.name == COORDINATOR,
        skills=persona.skills,
    )


def reachable_writes(persona: Persona) -> tuple[str, ...]:
    """The write and destructive tools `persona` could call: its whitelist's names and `*` patterns
    resolved against the tool registry, minus its blacklist. A read-only persona reaches none (the
    toolbag drops them), nor does one without a whitelist (the coordinator's read-only set). MCP
    entries count: an MCP tool is a write until an admin marks it read."""
    if persona.tools is None or persona.permission_mode == "read-only":
        return ()
    writes = tool_names.write_tools()
    reached: list[str] = []
    for entry in persona.tools:
        if entry.startswith(tool_names.MCP_PREFIX):
            reached.append(entry)
        else:
            reached.extend(tool_names.expand(entry, writes))
    allowed = (name for name in reached if not matches_any(name, persona.disallowed_tools))
    return tuple(dict.fromkeys(allowed))


def _skill_plan(skill: Skill) -> SkillPlan:
    return SkillPlan(skill.name, skill.description, skill.always, tuple(sorted(skill.files)))


def _mcp_plan(server: McpTemplate) -> McpPlan:
    return McpPlan(
        server.name, server.transport, server.url, tuple(server.headers), server.timeout, server.description
    )


def mcp_record(server: McpTemplate) -> dict:
    """How `Pack.mcp_servers` remembers a server it added (never a header value: it has none)."""
    return {
        "name": server.name,
        "transport": server.transport,
        "url": server.url,
        "headers": list(server.headers),
        "timeout": server.timeout,
    }


def other_files(contents: PackContents) -> tuple[str, ...]:
    """The pack's files that install nothing (README, LICENSE...): shown, never installed."""
    installed_dirs = (f"{AGENTS_DIR}/", f"{SKILLS_DIR}/")
    return tuple(
        sorted(
            path
            for path in contents.files
            if path not in (MANIFEST, SIGNATURE) and not path.startswith(installed_dirs)
        )
    )


# --- what blocks an install -------------------------------------------------------------------


def reserved_refusals(contents: PackContents) -> list[str]:
    """Refusals no confirmation lifts: the reviewer is the review gate's, and a name used twice."""
    refusals = []
    if any(persona.name == REVIEWER for persona in contents.personas):
        refusals.append(
            _(
                "The pack has a persona named 'reviewer': only the review gate runs the reviewer; "
                "a pack cannot replace it."
            )
        )
    for message, names in (
        (_("The pack has two personas named %(name)s."), [p.name for p in contents.personas]),
        (_("The pack has two skills named %(name)s."), [s.name for s in contents.skills]),
        (_("The pack has two MCP servers named %(name)s."), [m.name for m in contents.manifest.mcp_servers]),
    ):
        for name in sorted({name for name in names if names.count(name) > 1}):
            refusals.append(message % {"name": repr(name)})
    return refusals


def _coordinator_refusals(contents: PackContents, user) -> list[str]:
    replaces = any(persona.name == COORDINATOR for persona in contents.personas)
    if replaces and not user_agents.may_override_coordinator(user):
        return [
            _(
                "The pack replaces the coordinator ('default'): only an org admin may install it, "
                "and must confirm it explicitly."
            )
        ]
    return []


def _conflicts(organization, contents: PackContents, installed: Pack | None) -> Iterable[Conflict]:
    """Rows of the organization with a pack's name that this pack did not install."""
    ours = installed.pk if installed else None
    for model, kind, names in (
        (UserAgent, AGENT, [p.name for p in contents.personas]),
        (UserSkill, SKILL, [s.name for s in contents.skills]),
    ):
        rows = model.objects.filter(organization=organization, name__in=names).select_related("pack")
        for row in rows:
            if ours is None or row.pack_id != ours:
                yield Conflict(kind, row.name, _conflict_message(kind, row.name, row.pack))
    recorded = {server["name"] for server in (installed.mcp_servers if installed else [])}
    names = [server.name for server in contents.manifest.mcp_servers if server.name not in recorded]
    for name in McpServer.objects.filter(organization=organization, name__in=names).values_list(
        "name", flat=True
    ):
        yield Conflict(MCP_SERVER, name, _conflict_message(MCP_SERVER, name, None))


def _conflict_message(kind: str, name: str, other_pack: Pack | None) -> str:
    what = {AGENT: _("an agent"), SKILL: _("a skill"), MCP_SERVER: _("an MCP server")}[kind]
    if other_pack is not None:
        return _(
            "Your organization already has %(what)s named %(name)s, installed by the pack %(pack)s: "
            "uninstall that pack, or rename it in this one, first."
        ) % {"what": what, "name": repr(name), "pack": repr(other_pack.name)}
    return _(
        "Your organization already has %(what)s named %(name)s that this pack did not install: "
        "rename or delete it first, then install again."
    ) % {"what": what, "name": repr(name)}


def _invalid(organization, contents: PackContents, installed: Pack | None, user) -> list[str]:
    """The rules hand-written agents, skills and MCP servers pass, applied to the pack's."""
    ours_agents = _rows_by_name(UserAgent, installed)
    ours_skills = _rows_by_name(UserSkill, installed)
    known_skills = _skills_after(organization, contents, installed)
    problems = []
    for persona in contents.personas:
        agent = agent_row(organization, persona, ours_agents.get(persona.name))
        errors = user_agents.field_errors(agent, user)
        errors.pop("name", None)  # the reserved names and duplicates are worded above
        errors.pop("skills", None)  # the pack's own skills are not rows yet: checked here instead
        missing = [name for name in persona.skills if name not in known_skills]
        if missing:
            errors["skills"] = [_("Unknown skill(s): %(names)s.") % {"names": ", ".join(missing)}]
        problems += _worded(_("persona"), persona.name, errors)
    for skill in contents.skills:
        row = skill_row(organization, skill, ours_skills.get(skill.name))
        errors = user_skills.field_errors(row)
        errors.pop("name", None)
        problems += _worded(_("skill"), skill.name, errors)
    for server in contents.manifest.mcp_servers:
        problems += _worded(_("MCP server"), server.name, mcp_errors(organization, server))
    return problems


def _rows_by_name(model, installed: Pack | None) -> dict:
    if installed is None:
        return {}
    return {row.name: row for row in model.objects.filter(pack=installed)}


def _skills_after(organization, contents: PackContents, installed: Pack | None) -> set[str]:
    """The skill names the organization will have once this pack is installed."""
    known = set(skill_sources.available_skills(organization.pk))
    if installed is not None:
        known -= set(UserSkill.objects.filter(pack=installed).values_list("name", flat=True))
    return known | {skill.name for skill in contents.skills}


def agent_row(organization, persona: Persona, existing: UserAgent | None = None) -> UserAgent:
    """The user-agent row `persona` becomes (the pack's existing row updated, or a new one)."""
    agent = existing if existing is not None else UserAgent(organization=organization)
    for key, value in persona_fields(persona).items():
        setattr(agent, key, value)
    return agent


def skill_row(organization, skill: Skill, existing: UserSkill | None = None) -> UserSkill:
    row = existing if existing is not None else UserSkill(organization=organization)
    row.name = skill.name
    row.description = skill.description
    row.when_to_use = skill.when_to_use
    row.body = skill.body
    row.files = dict(skill.files)
    row.always = skill.always
    return row


def mcp_errors(organization, server: McpTemplate) -> dict[str, list[str]]:
    """The MCP server model's own checks (name, transport, and the egress policy on its URL)."""
    row = McpServer(
        organization=organization,
        name=server.name,
        transport=server.transport,
        url=server.url,
        timeout=server.timeout,
        enabled=False,
    )
    try:
        row.clean_fields(exclude=["organization", "headers"])
        row.clean()
    except ValidationError as exc:
        return exc.message_dict if hasattr(exc, "error_dict") else {"__all__": exc.messages}
    return {}


def _worded(kind: str, name: str, errors: dict[str, list[str]]) -> list[str]:
    return [
        _("%(kind)s %(name)s: %(message)s") % {"kind": kind, "name": repr(name), "message": message}
        if key == "__all__"
        else _("%(kind)s %(name)s, %(field)s: %(message)s")
        % {"kind": kind, "name": repr(name), "field": key, "message": message}
        for key, messages in errors.items()
        for message in messages
    ]


# --- an upgrade's diff ------------------------------------------------------------------------


def _changes(installed: Pack, contents: PackContents) -> Iterable[Change]:
    old_agents = {row.name: _agent_text(row) for row in UserAgent.objects.filter(pack=installed)}
    new_agents = {p.name: persona_to_markdown(p) for p in contents.personas}
    yield from _compare(AGENT, old_agents, new_agents, installed.version, contents.manifest.version)
    old_skills = {row.name: skill_text(row.to_skill()) for row in UserSkill.objects.filter(pack=installed)}
    new_skills = {skill.name: skill_text(skill) for skill in contents.skills}
    yield from _compare(SKILL, old_skills, new_skills, installed.version, contents.manifest.version)
    old_servers = {record["name"]: _server_text(record) for record in installed.mcp_servers or []}
    new_servers = {s.name: _server_text(mcp_record(s)) for s in contents.manifest.mcp_servers}
    yield from _compare(MCP_SERVER, old_servers, new_servers, installed.version, contents.manifest.version)


def _compare(kind: str, old: dict[str, str], new: dict[str, str], old_version: str, new_version: str):
    for name in sorted(old.keys() | new.keys()):
        before, after = old.get(name), new.get(name)
        if before is None:
            status = ADDED
        elif after is None:
            status = REMOVED
        else:
            status = UNCHANGED if before == after else CHANGED
        diff = "" if status == UNCHANGED else _diff(name, before or "", after or "", old_version, new_version)
        yield Change(kind, name, status, diff)


def _diff(name: str, before: str, after: str, old_version: str, new_version: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=f"{name} {old_version}",
        tofile=f"{name} {new_version}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _dropped(installed: Pack, contents: PackContents) -> Removals:
    now = removals(installed)
    keep_agents = {p.name for p in contents.personas}
    keep_skills = {s.name for s in contents.skills}
    keep_servers = {s.name for s in contents.manifest.mcp_servers}
    return Removals(
        agents=tuple(name for name in now.agents if name not in keep_agents),
        skills=tuple(name for name in now.skills if name not in keep_skills),
        mcp_servers=tuple(name for name in now.mcp_servers if name not in keep_servers),
    )


def _agent_text(row: UserAgent) -> str:
    try:
        return user_agents.to_markdown(row)
    except PersonaError as exc:  # a row edited into an unusable state since: show what is stored
        return f"# {exc.message}\n{row.body}\n"


def skill_text(skill: Skill) -> str:
    """A skill as one text to diff: its front matter, its body, then each extra file."""
    meta: dict = {"name": skill.name, "description": skill.description}
    if skill.when_to_use:
        meta["when_to_use"] = skill.when_to_use
    if skill.always:
        meta["always"] = True
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=10_000)
    text = f"---\n{front}---\n\n{skill.body.strip()}\n"
    for filename in sorted(skill.files):
        text += f"\n===== {filename} =====\n{skill.files[filename].rstrip()}\n"
    return text


def _server_text(record: dict) -> str:
    return "".join(f"{key}: {record.get(key)}\n" for key in ("transport", "url", "headers", "timeout"))
