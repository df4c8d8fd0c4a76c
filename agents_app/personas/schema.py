"""Persona values and the persona file format.

A persona is a Markdown file with YAML front matter (docs/personas.md): the front matter says what
the agent is and what it may use, the body is its system prompt. This module turns text into a `Persona` (and
back, for the admin's "view as .md"), and nothing else: where files come from and which one wins
is the registry's business (`agents_app.personas.registry`).

Parsing is strict about what it cannot use (a malformed file raises exactly one `PersonaError`
naming the file and, for YAML errors, the line) and lenient about what it does not know (unknown
keys are kept in `Persona.extra` and reported by `unknown_keys`, so a newer file still loads).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

import frontmatter
import yaml
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from agents_app.personas import claude_code
from agents_app.personas.keys import KNOWN_KEYS

PERMISSION_MODES = ("read-only", "mutating-with-confirm", "dual-sign-required")
COORDINATOR = "default"
REVIEWER = "reviewer"
# Writes scheduled reports (docs/schedules.md); never dispatched by the coordinator.
REPORTER = "reporter"


class PersonaError(Exception):
    """A persona file or row that cannot be used; carries where it came from."""

    def __init__(self, message: str, path: str | None = None):
        self.message = message
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


@dataclass(frozen=True)
class Persona:
    name: str
    description: str
    when_to_use: str
    body: str = ""
    tools: tuple[str, ...] | None = None  # None: the coordinator's read-only set
    disallowed_tools: tuple[str, ...] = ()
    permission_mode: str = "read-only"
    max_turns: int = 15
    max_tool_calls: int | None = None
    model: str | None = None
    critical_reminder: str = ""
    skills: tuple[str, ...] = ()
    # Which other skills it is offered (names or * patterns); None: all (the reviewer: none), (): none.
    skills_available: tuple[str, ...] | None = None
    # Names or * patterns of the tools never deferred; None: the toolsets' own choice (ToolSpec.core).
    core_tools: tuple[str, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # unknown front-matter keys, kept
    source: str = "builtin"  # builtin | mounted | user
    path: str | None = None
    # How a Claude Code file's keys, tools, modes and model were read (claude_code.normalize).
    import_notes: tuple[str, ...] = field(default=(), compare=False)

    @property
    def is_coordinator(self) -> bool:
        return self.name == COORDINATOR


@dataclass(frozen=True)
class Skill:
    """A prompt fragment: active (its body in the system prompt) or offered (catalog + `Skill` tool)."""

    name: str
    description: str
    body: str
    source: str = "builtin"  # builtin | mounted | user
    path: str | None = None
    when_to_use: str = ""
    triggers: tuple[str, ...] = ()
    always: bool = False
    # A folder skill's directory: its other files are readable through the `Skill` tool.
    folder: str | None = None
    # An organization's skill: its extra files, {filename: text}.
    files: Mapping[str, str] = field(default_factory=dict, compare=False)


DEFAULT_MAX_TURNS = 15
COORDINATOR_MAX_TURNS = 12
MAX_TURNS_LIMIT = 200
MAX_TOOL_CALLS_LIMIT = 1000
NAME_MAX_LENGTH = 64
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
# A tool entry: a tool name (snake_case or PascalCase for the control tools) or a `*` pattern.
TOOL_ENTRY_RE = re.compile(r"^[A-Za-z0-9_*-]+$")
# The persona schema, declared once (docs/personas.md): the front-matter keys in file order
# (`keys.KNOWN_KEYS`), the first three required. Everything else (the user-agent columns, the admin
# form, the API serializer, the canonical export) is derived from these tuples and `persona_fields`.
# Read by the skills layer (agents_app/personas/skills.py); not a user-agent column: a user agent
# keeps it among its extra keys, so the admin, the API and the .md export carry it unchanged.
SKILLS_AVAILABLE = "skills_available"
# Like it: the tools whose schemas the agent is always sent when its other tools are deferred
# behind ToolSearch (docs/kernel.md "Deferred tools and ToolSearch"); kept among a user agent's extra keys.
CORE_TOOLS = "core_tools"
EXTRA_FIELDS = (SKILLS_AVAILABLE, CORE_TOOLS)
REQUIRED_KEYS = KNOWN_KEYS[:3]
OPTIONAL_KEYS = KNOWN_KEYS[3:]
# What a stored persona (a user agent) holds: every key, the body, and the unknown keys it kept.
STORED_FIELDS = (*REQUIRED_KEYS, "body", *OPTIONAL_KEYS, "extra")
# Keys left out of a canonical file when they hold their implicit value.
_OMITTED_WHEN_EMPTY = frozenset({"disallowed_tools", "model", "critical_reminder", "skills"})
# A skill name or a `*` pattern of skill names (`skills_available`).
SKILL_PATTERN_RE = re.compile(r"^[a-z0-9*?-]+$")
# A persona is a page of text; anything larger is a mistake or an attack (docs/personas.md).
MAX_PERSONA_BYTES = 64 * 1024
_YAML = frontmatter.YAMLHandler()


class _NoAliasLoader(yaml.SafeLoader):
    """YAML without anchors and aliases: `&a` / `*a` let a few hundred bytes expand to megabytes
    ("billion laughs"), and no persona needs them."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None,
                None,
                _("YAML aliases (*%(anchor)s) are not allowed in a persona") % {"anchor": event.anchor},
                event.start_mark,
            )
        if getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None,
                None,
                _("YAML anchors (&%(anchor)s) are not allowed in a persona") % {"anchor": event.anchor},
                event.start_mark,
            )
        return super().compose_node(parent, index)


def check_size(text: str, path: str | None = None) -> None:
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_PERSONA_BYTES:
        raise PersonaError(
            _("the persona is %(size)s bytes; the limit is %(limit)s bytes")
            % {"size": size, "limit": MAX_PERSONA_BYTES},
            path,
        )


# ---------------------------------------------------------------------------------------------
# Reading


def _split_front_matter(text: object, path: str | None) -> tuple[dict, str]:
    """Separate the YAML mapping from the body, with errors that point at the file's own lines."""
    if not isinstance(text, str):
        raise PersonaError(_("a persona must be text"), path)
    check_size(text, path)  # before any parsing
    text = text.removeprefix("\ufeff")
    stripped = text.lstrip()
    if not _YAML.detect(stripped):
        raise PersonaError(
            _(
                "no front matter: the file must start with a line '---', then YAML keys "
                "(name, description, when_to_use...), then a closing '---' line"
            ),
            path,
        )
    try:
        raw_meta, body = _YAML.split(stripped)
    except ValueError:
        message = _("the front matter is never closed: add a '---' line after the keys")
        raise PersonaError(message, path) from None
    # The YAML block starts on the opening '---' line; blank lines before it shift every line number.
    offset = text[: len(text) - len(stripped)].count("\n")
    try:
        meta = yaml.load(raw_meta, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        raise PersonaError(_yaml_message(exc, offset), path) from None
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:
        raise PersonaError(
            _("the front matter is not valid YAML (%(error)s)") % {"error": exc}, path
        ) from None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise PersonaError(
            _("the front matter must be a mapping of keys to values, not a %(kind)s") % {"kind": _kind(meta)},
            path,
        )
    return meta, body.strip()


def _yaml_message(exc: yaml.YAMLError, offset: int) -> str:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return _("invalid YAML in the front matter at line %(line)s: %(problem)s") % {
            "line": mark.line + 1 + offset,
            "problem": problem,
        }
    return _("invalid YAML in the front matter: %(problem)s") % {"problem": problem}


def _kind(value: object) -> str:
    names = {
        list: pgettext("kind of YAML value", "list"),
        str: pgettext("kind of YAML value", "string"),
        int: pgettext("kind of YAML value", "number"),
        float: pgettext("kind of YAML value", "number"),
        bool: pgettext("kind of YAML value", "boolean"),
    }
    return names.get(type(value), type(value).__name__)


def _text(meta: dict, key: str, path: str | None, *, required: bool = False) -> str:
    value = meta.get(key)
    if value is None:
        if required:
            raise PersonaError(_("missing required key '%(key)s'") % {"key": key}, path)
        return ""
    if not isinstance(value, str):
        raise PersonaError(
            _("'%(key)s' must be text, not a %(kind)s") % {"key": key, "kind": _kind(value)}, path
        )
    if required and not value.strip():
        raise PersonaError(_("'%(key)s' must not be empty") % {"key": key}, path)
    return value.strip()


def _names(meta: dict, key: str, path: str | None, pattern: re.Pattern[str]) -> tuple[str, ...] | None:
    """A list key: a YAML list of strings or one comma-separated string; None when absent."""
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        items = [item.strip() for item in value.split(",")]
        items = [item for item in items if item]
    elif isinstance(value, list):
        items = []
        for item in value:
            if not isinstance(item, str):
                message = _("'%(key)s' must list names as text; %(item)s is a %(kind)s") % {
                    "key": key,
                    "item": repr(item),
                    "kind": _kind(item),
                }
                raise PersonaError(message, path)
            items.append(item.strip())
    else:
        message = _("'%(key)s' must be a list or a comma-separated string, not a %(kind)s") % {
            "key": key,
            "kind": _kind(value),
        }
        raise PersonaError(message, path)
    for item in items:
        if not pattern.match(item):
            raise PersonaError(
                _("'%(key)s' has an invalid entry %(item)s") % {"key": key, "item": repr(item)}, path
            )
    return tuple(dict.fromkeys(items))  # de-duplicated, order kept


def _integer(meta: dict, key: str, path: str | None, default: int | None, maximum: int) -> int | None:
    value = meta.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        message = _("'%(key)s' must be a whole number, not a %(kind)s") % {"key": key, "kind": _kind(value)}
        raise PersonaError(message, path)
    if not 1 <= value <= maximum:
        raise PersonaError(
            _("'%(key)s' must be between 1 and %(maximum)s") % {"key": key, "maximum": maximum}, path
        )
    return value


def check_name(name: str, path: str | None = None) -> str:
    """Persona names are lowercase kebab-case: they appear in `subagent_type` and in URLs."""
    if len(name) > NAME_MAX_LENGTH or not NAME_RE.match(name):
        raise PersonaError(
            _(
                "invalid name %(name)s: use lowercase letters, digits and single hyphens "
                "(like 'specialist-disk'), at most %(limit)s characters"
            )
            % {"name": repr(name), "limit": NAME_MAX_LENGTH},
            path,
        )
    return name


def persona_from_mapping(
    meta: dict, body: str = "", source: str = "builtin", path: str | None = None
) -> Persona:
    """Build and check a persona from front-matter keys (also used for user agents).

    Claude Code spellings (camelCase keys, its tool names and permission modes, no `when_to_use`)
    are read first as the Ongrid keys they mean; `Persona.import_notes` says what was mapped.
    """
    try:
        meta, notes = claude_code.normalize(meta)
    except claude_code.DuplicateKeyError as exc:
        raise PersonaError(str(exc), path) from None
    name = check_name(_text(meta, "name", path, required=True), path)
    mode = meta.get("permission_mode", "read-only")
    if mode is None:
        mode = "read-only"
    if mode not in PERMISSION_MODES:
        raise PersonaError(
            _("'permission_mode' must be one of %(modes)s, not %(mode)s")
            % {"modes": ", ".join(PERMISSION_MODES), "mode": repr(mode)},
            path,
        )
    default_turns = COORDINATOR_MAX_TURNS if name == COORDINATOR else DEFAULT_MAX_TURNS
    max_turns = _integer(meta, "max_turns", path, default_turns, MAX_TURNS_LIMIT)
    model = meta.get("model")
    if model is not None and not isinstance(model, str):
        raise PersonaError(_("'model' must be text, not a %(kind)s") % {"kind": _kind(model)}, path)
    return Persona(
        name=name,
        description=_text(meta, "description", path, required=True),
        when_to_use=_text(meta, "when_to_use", path, required=True),
        body=body,
        tools=_names(meta, "tools", path, TOOL_ENTRY_RE),
        disallowed_tools=_names(meta, "disallowed_tools", path, TOOL_ENTRY_RE) or (),
        permission_mode=mode,
        max_turns=max_turns,
        max_tool_calls=_integer(meta, "max_tool_calls", path, None, MAX_TOOL_CALLS_LIMIT),
        model=model.strip() or None if model else None,
        critical_reminder=_text(meta, "critical_reminder", path),
        skills=_names(meta, "skills", path, NAME_RE) or (),
        skills_available=_names(meta, "skills_available", path, SKILL_PATTERN_RE),
        core_tools=_names(meta, CORE_TOOLS, path, TOOL_ENTRY_RE),
        extra={k: v for k, v in meta.items() if k not in KNOWN_KEYS and k not in EXTRA_FIELDS},
        source=source,
        path=path,
        import_notes=tuple(notes),
    )


def parse_persona(text: str, source: str = "builtin", path: str | None = None) -> Persona:
    """Parse a persona file. Raises one `PersonaError` (with `path`) for anything unusable."""
    meta, body = _split_front_matter(text, path)
    for key in meta:
        if not isinstance(key, str):
            message = _("front-matter keys must be text; %(key)s is a %(kind)s")
            raise PersonaError(message % {"key": repr(key), "kind": _kind(key)}, path)
    return persona_from_mapping(meta, body, source, path)


def unknown_keys(persona: Persona) -> list[str]:
    """Front-matter keys the format does not define (kept in `extra`, worth a warning)."""
    return sorted(persona.extra)


SKILL_KEYS = ("name", "description", "when_to_use", "triggers", "always")


def parse_skill(
    text: str, source: str = "builtin", path: str | None = None, folder: str | None = None
) -> Skill:
    """Parse a skill file (a single `.md` or a folder's `SKILL.md`, Claude Code's format).

    Front matter `name` and `description` (required), `when_to_use`, `triggers` (a list of words or
    phrases) and `always` (a boolean); the body is the prompt. Other keys (Claude Code's
    `allowed-tools`, `license`...) are ignored, so a skill written for Claude Code loads as it is.
    """
    meta, body = _split_front_matter(text, path)
    for key in meta:
        if not isinstance(key, str):
            message = _("front-matter keys must be text; %(key)s is a %(kind)s")
            raise PersonaError(message % {"key": repr(key), "kind": _kind(key)}, path)
    if "when-to-use" in meta and "when_to_use" not in meta:
        meta["when_to_use"] = meta.pop("when-to-use")
    name = check_name(_text(meta, "name", path, required=True), path)
    description = _text(meta, "description", path, required=True)
    if not body:
        raise PersonaError(_("a skill needs a body: it is the prompt text the skill adds"), path)
    always = meta.get("always", False)
    if always is None:
        always = False
    if not isinstance(always, bool):
        raise PersonaError(
            _("'%(key)s' must be true or false, not a %(kind)s") % {"key": "always", "kind": _kind(always)},
            path,
        )
    return Skill(
        name=name,
        description=description,
        body=body,
        source=source,
        path=path,
        when_to_use=_text(meta, "when_to_use", path),
        triggers=_triggers(meta, path),
        always=always,
        folder=folder,
    )


def _triggers(meta: dict, path: str | None) -> tuple[str, ...]:
    """`triggers`: words or phrases (a list, or one comma-separated string) that suggest the skill."""
    value = meta.get("triggers")
    if value is None:
        return ()
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        message = _("'%(key)s' must be a list or a comma-separated string, not a %(kind)s")
        raise PersonaError(message % {"key": "triggers", "kind": _kind(value)}, path)
    return tuple(dict.fromkeys(item.strip() for item in items if item.strip()))


# ---------------------------------------------------------------------------------------------
# Tool selection


def matches_any(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)


def select_tools(persona: Persona, available: Iterable[str], default: Iterable[str] = ()) -> list[str]:
    """The names of `available` the persona's own lists allow, in `available` order.

    The whitelist (`tools`, or `default` when the persona has none) selects; the blacklist
    (`disallowed_tools`) then removes, so a name on both is disallowed. Role rules (workers never
    get control tools, read-only personas never get write tools) are the toolbag's, applied on top.
    """
    allow = persona.tools if persona.tools is not None else tuple(default)
    return [
        name
        for name in available
        if matches_any(name, allow) and not matches_any(name, persona.disallowed_tools)
    ]


# ---------------------------------------------------------------------------------------------
# Writing


class _Dumper(yaml.SafeDumper):
    """YAML in the style people write persona files in: indented block lists, `|` for multi-line text."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        return super().increase_indent(flow, False)


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def persona_fields(persona: Persona) -> dict[str, Any]:
    """Every stored field of `persona` as plain JSON values (lists, not tuples; "" for no model)."""
    values: dict[str, Any] = {}
    for key in STORED_FIELDS:
        value = getattr(persona, key)
        values[key] = list(value) if isinstance(value, tuple) else dict(value) if key == "extra" else value
    values["model"] = persona.model or ""
    for key in EXTRA_FIELDS:
        if getattr(persona, key) is not None:
            values["extra"][key] = list(getattr(persona, key))
    return values


def persona_to_mapping(persona: Persona) -> dict[str, Any]:
    """The front-matter keys of `persona`, canonical order, defaults left out where implicit."""
    fields = persona_fields(persona)
    meta: dict[str, Any] = {}
    for key in KNOWN_KEYS:
        value = fields[key]
        if value is None or (key in _OMITTED_WHEN_EMPTY and not value):
            continue
        meta[key] = value
    meta.update(persona.extra)
    for key in EXTRA_FIELDS:
        if getattr(persona, key) is not None:
            meta[key] = list(getattr(persona, key))
    return meta


def persona_to_markdown(persona: Persona) -> str:
    """The canonical file text of `persona`; `parse_persona` of it gives the same persona back."""
    front = yaml.dump(
        persona_to_mapping(persona),
        Dumper=_Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=10_000,
    )
    body = persona.body.strip()
    return f"---\n{front}---\n\n{body}\n" if body else f"---\n{front}---\n"
