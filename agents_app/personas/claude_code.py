"""Claude Code agent files, read as Ongrid personas (docs/personas.md, "Claude Code agent files").

A Claude Code subagent file (`.claude/agents/*.md`) is Markdown with YAML front matter too, but it
spells keys in camelCase (`permissionMode`, `maxTurns`), has no `when_to_use`, names Claude Code's
own tools (`Read`, `Grep`, `Bash`) and Claude Code's permission modes, and carries keys only
Claude Code uses (`color`, `hooks`). `normalize` turns such a mapping into the Ongrid schema before
the persona parser checks it, and says what it changed in a report, so a file copied from a
Claude Code project loads unchanged and its owner can see how it was read.

Safety first: a Claude Code tool is mapped only to an Ongrid tool of the same nature (a reading
tool never becomes a write tool), and `bypassPermissions` becomes the strictest Ongrid mode, never
a way around the review gate. Models (`sonnet`, `inherit`) are resolved later, per organization,
by `agents_app.llm.model_aliases`.
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.translation import gettext as _

from agents_app.personas.keys import KNOWN_KEYS
from agents_app.toolsets.control.manifest import AGENT_TOOL
from agents_app.toolsets.hosts.manifest import HOST_BASH, HOST_FIND_LARGE_FILES, HOST_STAT_FILE
from agents_app.toolsets.knowledge.manifest import QUERY_KNOWLEDGE
from agents_app.toolsets.skills.manifest import SKILL_TOOL

# The persona keys (snake_case) plus the Claude Code spelling `allowedTools` of `tools`.
EXTRA_ALIASES = {"allowedTools": "tools", "allowed_tools": "tools"}

# Front-matter keys only Claude Code acts on; Ongrid has nothing they could configure.
CLAUDE_CODE_ONLY_KEYS = frozenset(
    {"color", "hooks", "mcpServers", "mcp_servers", "memory", "background", "isolation", "effort"}
)

# Claude Code permission mode -> Ongrid permission mode. Nothing maps to a mode weaker than its
# source: `bypassPermissions` gets the strictest mode (reviewer and a person sign every write).
PERMISSION_MODES = {
    "default": "read-only",
    "plan": "read-only",
    "dontAsk": "read-only",
    "acceptEdits": "mutating-with-confirm",
    "bypassPermissions": "dual-sign-required",
}

# Claude Code tool -> the Ongrid tool that does the same kind of thing (reads stay reads).
MAPPED_TOOLS = {
    "Bash": HOST_BASH.name,  # read-only by its shell policy, on a device
    "Read": QUERY_KNOWLEDGE.name,  # reading the documentation Ongrid has: the knowledge vault
    "Task": AGENT_TOOL.name,
    "Agent": AGENT_TOOL.name,
}
# Claude Code tools with no Ongrid counterpart -> Ongrid tools that can do part of their job.
DROPPED_TOOLS = {
    "Grep": (HOST_BASH.name, QUERY_KNOWLEDGE.name),
    "Glob": (HOST_BASH.name, HOST_STAT_FILE.name),
    "LS": (HOST_BASH.name, HOST_FIND_LARGE_FILES.name),
    "Write": (),
    "Edit": (),
    "MultiEdit": (),
    "NotebookEdit": (),
    "NotebookRead": (QUERY_KNOWLEDGE.name,),
    "WebFetch": (QUERY_KNOWLEDGE.name,),
    "WebSearch": (QUERY_KNOWLEDGE.name,),
    "TodoWrite": (),
    "TodoRead": (),
    "BashOutput": (HOST_BASH.name,),
    "KillShell": (),
    "KillBash": (),
    "ExitPlanMode": (),
    "SlashCommand": (),
    # Ongrid hands its own `Skill` tool to every agent offered skills (docs/skills.md): not listed.
    SKILL_TOOL.name: (),
}
# `Bash(git status:*)`: a Claude Code permission rule; the tool name is before the parenthesis.
# The model names `agents_app.llm.model_aliases` resolves per endpoint (personas and llm are
# sibling layers that do not import each other; tests/agents/test_claude_code_agents.py keeps the
# two in step). Only used to explain a file's `model` in the report.
INHERIT = "inherit"
MODEL_ALIASES = ("sonnet", "opus", "haiku")
_RULE_RE = re.compile(r"^([A-Za-z]+)\((.*)\)$", re.DOTALL)
_LIST_KEYS = ("tools", "disallowed_tools")


class DuplicateKeyError(ValueError):
    """The same key given in both spellings (`maxTurns` and `max_turns`): which one is meant?"""

    def __init__(self, first: str, second: str):
        self.keys = (first, second)
        super().__init__(
            _("'%(first)s' and '%(second)s' are the same key; keep only one of them")
            % {"first": first, "second": second}
        )


def camel_case(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part.capitalize() for part in rest)


ALIASES = {camel_case(key): key for key in KNOWN_KEYS if "_" in key} | EXTRA_ALIASES


def normalize(mapping: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The Ongrid front matter `mapping` means, and the notes saying what was read differently.

    Raises DuplicateKeyError when a key is given in both spellings. Values of the wrong type are
    left for the schema to reject with its own message.
    """
    notes: list[str] = []
    meta = _canonical_keys(mapping, notes)
    _fill_when_to_use(meta, notes)
    _map_permission_mode(meta, notes)
    dropped_any = False
    for key in _LIST_KEYS:
        dropped_any |= _map_tools(meta, key, notes)
    if dropped_any:
        notes.append(_("Ongrid tools a persona may list: %(tools)s.") % {"tools": ", ".join(_ongrid_tools())})
    _note_model(meta, notes)
    return meta, notes


def _canonical_keys(mapping: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for key, value in mapping.items():
        if key in CLAUDE_CODE_ONLY_KEYS:
            notes.append(_("'%(key)s' is a Claude Code setting Ongrid does not use; ignored.") % {"key": key})
            continue
        canonical = ALIASES.get(key, key)
        if canonical in meta and (value is not None and meta[canonical] is not None):
            raise DuplicateKeyError(spelled[canonical], key)
        if canonical in meta and value is None:
            continue  # an empty key beside a filled one: the filled one is meant
        if canonical != key:
            notes.append(_("'%(alias)s' read as '%(key)s'.") % {"alias": key, "key": canonical})
        meta[canonical] = value
        spelled[canonical] = key
    return meta


def _fill_when_to_use(meta: dict[str, Any], notes: list[str]) -> None:
    when = meta.get("when_to_use")
    description = meta.get("description")
    if (when is None or when == "") and isinstance(description, str) and description.strip():
        meta["when_to_use"] = description
        notes.append(_("No 'when_to_use': the coordinator dispatches it by its description."))


def _map_permission_mode(meta: dict[str, Any], notes: list[str]) -> None:
    mode = meta.get("permission_mode")
    if isinstance(mode, str) and mode in PERMISSION_MODES:
        meta["permission_mode"] = PERMISSION_MODES[mode]
        notes.append(
            _("Claude Code permission mode '%(mode)s' read as '%(ongrid)s'.")
            % {"mode": mode, "ongrid": PERMISSION_MODES[mode]}
        )


def _entries(value: Any) -> list[Any] | None:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    if isinstance(value, list):
        return [item.strip() if isinstance(item, str) else item for item in value]
    return None


def _map_tools(meta: dict[str, Any], key: str, notes: list[str]) -> bool:
    """Rewrite the Claude Code names of one tool list; True when a tool was dropped."""
    entries = _entries(meta.get(key))
    if entries is None:
        return False
    result: list[Any] = []
    dropped = False
    for entry in entries:
        if not isinstance(entry, str):
            result.append(entry)
            continue
        name = _tool_of_rule(entry, notes)
        if name in MAPPED_TOOLS:
            result.append(MAPPED_TOOLS[name])
            notes.append(
                _("Tool '%(tool)s' mapped to %(ongrid)s.") % {"tool": name, "ongrid": MAPPED_TOOLS[name]}
            )
        elif name in DROPPED_TOOLS:
            dropped = True
            notes.append(_dropped_note(name, DROPPED_TOOLS[name]))
        else:
            result.append(entry)
    if entries != result or not isinstance(meta.get(key), list):
        meta[key] = list(dict.fromkeys(result))
    return dropped


def _tool_of_rule(entry: str, notes: list[str]) -> str:
    match = _RULE_RE.match(entry)
    if match is None:
        return entry
    name = match.group(1)
    if name in MAPPED_TOOLS or name in DROPPED_TOOLS:
        notes.append(
            _(
                "'%(rule)s': the rule in parentheses is Claude Code's; Ongrid's own policy for the "
                "tool applies."
            )
            % {"rule": entry}
        )
        return name
    return entry


def _dropped_note(name: str, instead: tuple[str, ...]) -> str:
    if instead:
        return _("Tool '%(tool)s' dropped: Ongrid has no such tool; instead use %(instead)s.") % {
            "tool": name,
            "instead": ", ".join(instead),
        }
    return _("Tool '%(tool)s' dropped: Ongrid has no such tool and none that does the same.") % {"tool": name}


def _note_model(meta: dict[str, Any], notes: list[str]) -> None:
    model = meta.get("model")
    if not isinstance(model, str):
        return
    if model.strip() == INHERIT:
        notes.append(_("Model 'inherit': it runs on the model of the agent that dispatches it."))
    elif model.strip() in MODEL_ALIASES:
        notes.append(
            _(
                "Model '%(model)s' is an alias: it runs on the model your LLM endpoint maps it to "
                "(its default model when the endpoint has no mapping for it)."
            )
            % {"model": model.strip()}
        )


def _ongrid_tools() -> list[str]:
    from agents_app.toolsets import names

    return sorted(names.read_tools() + names.write_tools() + names.control_tools())
