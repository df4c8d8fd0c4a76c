"""The coordinator's choice: answer a plain look-up with one inventory call, or dispatch the
specialist whose name, description and when-to-use fit the request best, with a brief that
quotes the user's words."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from agents_app.llm.base import ToolCall
from agents_app.toolsets.manifest import ROLE_DISPATCH

from .reading import Facts, routing_words, words
from .tool_knowledge import hints, lookup_tools, open_variant, tool_for
from .vocabulary import CAUSE_WORDS, CONCEPTS, LOOKUP_OPENERS, OPEN_WORDS

_CATALOG_ENTRY = re.compile(r"^- \*\*(?P<name>[^*]+)\*\* — (?P<description>.*)$")
_BRIEF_QUOTE = re.compile(r'^The user wrote: "(?P<words>.*?)"\n', re.DOTALL)


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    description: str
    when_to_use: str


def parse_catalog(system_prompt: str) -> list[CatalogEntry]:
    """The specialists listed in the coordinator's system prompt (format fixed by the registry)."""
    entries: dict[str, CatalogEntry] = {}
    lines = system_prompt.splitlines()
    for index, line in enumerate(lines):
        match = _CATALOG_ENTRY.match(line.strip())
        if not match:
            continue
        when = ""
        following = lines[index + 1].strip() if index + 1 < len(lines) else ""
        if following.startswith("When to use:"):
            when = following.removeprefix("When to use:").strip()
        name = match.group("name").strip()
        entries.setdefault(name, CatalogEntry(name, match.group("description").strip(), when))
    return list(entries.values())


def best_specialist(request: str, catalog: list[CatalogEntry]) -> CatalogEntry | None:
    """Word overlap weighted name 3 / description 2 / when-to-use 1; the concepts a symptom stands
    for count half, so the user's own words win; ties go to the first name A→Z."""
    asked = words(request)
    implied = routing_words(request)

    def overlap(found: set[str], entry: CatalogEntry) -> int:
        return (
            3 * len(found & words(entry.name.replace("-", " ").replace("_", " ")))
            + 2 * len(found & words(entry.description))
            + len(found & words(entry.when_to_use))
        )

    scored = []
    for entry in catalog:
        score = overlap(asked, entry) + overlap(implied, entry) / 2
        if score:
            scored.append((-score, entry.name, entry))
    return min(scored)[2] if scored else None


def direct_lookup(request: str, tools: list[dict], first_id: int = 1) -> list[ToolCall]:
    """The one inventory call that answers a plain look-up question ("which incidents are open?",
    "what role does node-07 have?"), or [] when the request is not one: it must open like a
    question or a "list/show", name a kind of record, and carry no symptom or "why" (those are
    investigations for a specialist)."""
    tokens = re.findall(r"\w+", request.lower())
    asked = words(request)
    if not tokens or tokens[0] not in LOOKUP_OPENERS or CAUSE_WORDS & set(tokens):
        return []
    symptoms = set().union(*CONCEPTS)
    names = {spec.get("function", {}).get("name") for spec in tools}
    facts = Facts.of(request)
    for tool, nouns in lookup_tools():
        if not asked & nouns or (asked - nouns) & symptoms:
            continue
        arguments: dict = {}
        variant, device_argument = open_variant(tool), hints(tool).device_argument
        if variant and asked & OPEN_WORDS and variant in names:
            tool = variant
        elif device_argument and facts.devices:
            arguments = {device_argument: facts.devices[0]}
        if tool in names:
            raw = json.dumps(arguments, ensure_ascii=False)
            return [ToolCall(id=f"offline_{first_id}", name=tool, arguments_raw=raw)]
    return []


def dispatch(entry: CatalogEntry, request: str, call_id: str = "offline_1") -> ToolCall:
    """The call that hands the request to `entry`, with a brief that stands on its own."""
    facts = Facts.of(request)
    context = ""
    if facts.devices:
        context = f"\nDevices mentioned: {', '.join(dict.fromkeys(facts.devices))}."
    brief = (
        f'The user wrote: "{request.strip()}"\n'
        f"Investigate this as {entry.name} ({entry.description}) and report what you find, "
        f"with the evidence behind each finding.{context}\n"
        "You cannot see the conversation: everything known is in this brief."
    )
    summary = request.strip().splitlines()[0] if request.strip() else "the request"
    arguments = {
        "description": f"Investigate: {summary[:60]}",
        "subagent_type": entry.name,
        "prompt": brief,
    }
    raw = json.dumps(arguments, ensure_ascii=False)
    return ToolCall(id=call_id, name=tool_for(ROLE_DISPATCH), arguments_raw=raw)


def users_words(request: str) -> str:
    """The user's own words: a worker's brief (written by `dispatch`) quotes them."""
    found = _BRIEF_QUOTE.match(request)
    return found.group("words") if found else request
