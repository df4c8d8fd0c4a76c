"""The offline model: a deterministic stand-in so Ongrid runs, demos and tests with no LLM at all.

It plays the same protocol as a real model, from the same inputs a real model sees:

- coordinator (AgentTool among its tools): reads the agent catalog in its system prompt, routes
  the user's words to the specialist whose name, description and when-to-use share the most words
  with them, and dispatches it with a self-contained brief; when the specialist's result comes
  back, it relays it.
- worker (or a coordinator with no specialist that fits): calls up to three of its own read tools
  whose names and descriptions fit the request, filling required arguments from the words (device
  names, paths, URLs, numbers, schema defaults); when the results come back it summarises them.
- nothing fits, or no tools: it answers plainly.

Every final answer says it comes from the offline model. It is not clever and never pretends to be.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from agents_app.llm.base import LLMCompletion, LLMDelta, LLMEvent, ToolCall

LABEL = "(Answer from Ongrid's offline model — a deterministic stand-in, not a real LLM.)"
CONTROL_TOOLS = {"AgentTool", "SendMessage", "TaskStop"}
MAX_TOOLS = 3
_MUTATING_WORDS = {
    "restart", "delete", "remove", "silence", "acknowledge", "ack", "resolve", "create", "update",
    "write", "kill", "stop", "apply", "set", "reboot", "drain", "scale",
}  # fmt: skip
_STOPWORDS = {
    "a", "an", "the", "is", "are", "was", "be", "on", "in", "at", "of", "to", "for", "and", "or", "it",
    "its", "this", "that", "with", "my", "our", "we", "i", "you", "me", "please", "can", "could", "what",
    "why", "how", "when", "who", "which", "there", "from", "by", "as", "do", "does", "did", "not", "no",
    "use", "used", "using", "any", "all", "about", "into", "has", "have", "had", "will", "would", "should",
    "el", "la", "los", "las", "de", "del", "en", "es", "un", "una", "y", "que", "le", "les", "des", "du",
    "et", "est", "specialist", "agent", "tool", "tools", "user", "asks", "ask",
}  # fmt: skip
_CATALOG_ENTRY = re.compile(r"^- \*\*(?P<name>[^*]+)\*\* — (?P<description>.*)$")
_DEVICE = re.compile(r"\b[a-z][a-z0-9]*(?:[-.][a-z0-9]+)*-\d+[a-z0-9-]*\b", re.IGNORECASE)
_IP = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}\b")
_URL = re.compile(r"https?://[^\s\"'<>)]+")
_PATH = re.compile(r"(?<![\w:/.])/(?:[\w.\-]+/?)*")
_DOMAIN = re.compile(r"\b(?:[a-z0-9-]+\.)+[a-z]{2,}\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w-])#?(\d+)\b")
# "on web", "host db-primary", "server ongrid-manager": the word after such a cue names a device even
# without the digits `_DEVICE` expects.
_DEVICE_CUE = re.compile(
    r"\b(?:on|host|server|device|node|machine)\s+([a-z][a-z0-9]*(?:[-.][a-z0-9]+)+)\b", re.IGNORECASE
)


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    description: str
    when_to_use: str


def words(text: str) -> set[str]:
    """Lower-cased content words, crudely singularised, so 'disks' meets 'disk'."""
    found = set()
    for word in re.findall(r"\w+", text.lower()):
        if word in _STOPWORDS or len(word) < 2:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        found.add(word)
    return found


# Symptoms people type, and the words the personas and tools use for them.
_CONCEPTS = {
    frozenset({"fail", "failing", "failed", "failure", "error", "down", "broken", "outage", "500", "502",
               "503", "5xx", "crash", "crashing", "firing", "alert", "page", "paged"}):
        {"incident", "root", "cause", "alert"},
    frozenset({"slow", "latency", "timeout", "timing"}): {"latency", "incident"},
    frozenset({"full", "space", "inode"}): {"disk", "filesystem"},
    frozenset({"cpu", "memory", "oom", "load", "swap"}): {"host", "load", "process"},
}  # fmt: skip


def request_words(text: str) -> set[str]:
    """`words` plus the concepts its symptoms stand for, so "checkout is failing" meets "incident"."""
    found = words(text)
    for symptoms, concepts in _CONCEPTS.items():
        if found & symptoms:
            found |= concepts
    return found


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
    implied = request_words(request) - asked

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


@dataclass(frozen=True)
class Facts:
    """What the request mentions that a tool argument could need."""

    text: str
    devices: list[str]
    urls: list[str]
    paths: list[str]
    domains: list[str]
    numbers: list[int]

    @classmethod
    def of(cls, text: str) -> Facts:
        urls = _URL.findall(text)
        without_urls = _URL.sub(" ", text)
        return cls(
            text=text,
            devices=list(
                dict.fromkeys(
                    _DEVICE.findall(without_urls)
                    + _IP.findall(without_urls)
                    + _DEVICE_CUE.findall(without_urls)
                )
            ),
            urls=urls,
            paths=_PATH.findall(without_urls),
            domains=[d for d in _DOMAIN.findall(without_urls) if not _IP.fullmatch(d)],
            numbers=[int(n) for n in _NUMBER.findall(_DEVICE.sub(" ", without_urls))],
        )


_MISSING = object()
_TEXT_KEYS = {"q", "query", "question", "text", "search", "prompt", "brief", "message", "keyword", "keywords",
              "topic", "description", "pattern", "reason"}  # fmt: skip


def fill_argument(key: str, spec: dict, facts: Facts) -> Any:
    """A plausible value for one argument, or _MISSING when the request does not supply one."""
    if "default" in spec:
        return spec["default"]
    if spec.get("enum"):
        return spec["enum"][0]
    name = key.lower()
    kind = spec.get("type", "string")
    hint = f"{name} {spec.get('description', '')}".lower()
    if any(part in name for part in ("device", "host", "server", "node", "target", "instance", "machine")):
        if facts.devices:
            return facts.devices[0]
        if facts.domains and "probe" not in name:
            return facts.domains[0]
    if "url" in name:
        return facts.urls[0] if facts.urls else _MISSING
    if any(part in name for part in ("domain", "hostname", "fqdn")):
        return facts.domains[0] if facts.domains else _MISSING
    if "path" in name or name in {"file", "dir", "directory"}:
        return facts.paths[0] if facts.paths else "/"
    if "promql" in hint:
        return "up"
    if "logql" in hint:
        return '{job=~".+"}'
    if "traceql" in hint:
        return "{}"
    if kind in ("integer", "number"):
        return facts.numbers[0] if facts.numbers else spec.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "string" and (name in _TEXT_KEYS or name.endswith("_query")):
        return facts.text
    return _MISSING


def plan_arguments(schema: dict, facts: Facts) -> dict | None:
    arguments = {}
    properties = schema.get("properties", {})
    for key in schema.get("required", []):
        value = fill_argument(key, properties.get(key, {}), facts)
        if value is _MISSING:
            return None
        arguments[key] = value
    return arguments


def pick_tool_calls(request: str, tools: list[dict]) -> list[ToolCall]:
    """Up to three read-looking tools whose names/descriptions share words with the request."""
    asked, facts = request_words(request), Facts.of(request)
    ranked = []
    for spec in tools:
        function = spec.get("function", {})
        name = function.get("name", "")
        name_words = words(name.replace("_", " "))
        if name in CONTROL_TOOLS or name_words & _MUTATING_WORDS:
            continue
        score = 2 * len(asked & name_words) + len(asked & words(function.get("description", "")))
        if not score:
            continue
        arguments = plan_arguments(function.get("parameters") or {}, facts)
        if arguments is not None:
            ranked.append((-score, name, arguments))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return [
        ToolCall(id=f"offline_{index}", name=name, arguments_raw=json.dumps(arguments, ensure_ascii=False))
        for index, (_, name, arguments) in enumerate(ranked[:MAX_TOOLS])
    ]


def dispatch(entry: CatalogEntry, request: str) -> ToolCall:
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
    return ToolCall(
        id="offline_dispatch", name="AgentTool", arguments_raw=json.dumps(arguments, ensure_ascii=False)
    )


def _content(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):  # multi-part content: keep the text parts
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def _trailing_results(conversation: list[dict]) -> list[tuple[str, str]]:
    """(tool name, content) of the tool messages answering the last assistant tool-call step."""
    names: dict[str, str] = {}
    results = []
    for message in reversed(conversation):
        if message.get("role") == "tool":
            results.append(message)
            continue
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                names[call.get("id", "")] = call.get("function", {}).get("name", "tool")
        break
    return [(names.get(m.get("tool_call_id", ""), "tool"), _content(m)) for m in reversed(results)]


def _worker_report(content: str) -> str:
    """The specialist's own answer out of AgentTool's JSON envelope, without a second label."""
    try:
        payload = json.loads(content)
    except ValueError:
        return content.strip()
    if not isinstance(payload, dict):
        return content.strip()
    text = str(payload.get("result") or payload.get("error") or content).replace(LABEL, "").strip()
    status = payload.get("worker_status") or payload.get("status")
    if status and status not in ("completed", "ok"):
        text = f"(the specialist ended {status}) {text}"
    return text


def summarise(results: list[tuple[str, str]]) -> str:
    if results and all(name == "AgentTool" for name, _ in results):
        body = "\n\n".join(_worker_report(content)[:3000] for _, content in results)
        return f"Here is what the specialist found:\n\n{body}\n\n{LABEL}"
    lines = [f"I ran {len(results)} tool call(s). What they returned:", ""]
    for name, content in results:
        lines.extend([f"**`{name}`**", ""])  # the blank line makes the bullets a Markdown list
        lines.extend(describe(content))
        lines.append("")
    lines.append(LABEL)
    return "\n".join(lines)


_LABEL_KEYS = ("title", "name", "summary", "event", "path", "message", "line", "resource_name", "status")
MAX_FIELDS, MAX_ITEMS, MAX_TEXT = 8, 3, 160


def _label(value: Any) -> str:
    """One short line for a value: a record's title/name/… rather than its whole JSON."""
    if isinstance(value, dict):
        for key in _LABEL_KEYS:
            if value.get(key) not in (None, "", [], {}):
                extra = next((value[k] for k in ("size", "severity", "at", "started_at") if k in value), None)
                text = f"{value[key]}" + (f" ({extra})" if extra not in (None, "") else "")
                return text[:MAX_TEXT]
        return json.dumps(value, ensure_ascii=False)[:MAX_TEXT]
    if isinstance(value, list):
        return f"{len(value)} item(s)"
    return str(value)[:MAX_TEXT]


def describe(content: str) -> list[str]:
    """A tool result as a few Markdown bullets a person can read; plain text is excerpted."""
    try:
        data = json.loads(content)
    except ValueError:
        excerpt = [line.strip() for line in content.splitlines() if line.strip()][:6]
        return [f"- {line[:MAX_TEXT]}" for line in excerpt] or ["- (empty result)"]
    if not isinstance(data, dict):
        data = {"result": data}
    bullets = []
    for key, value in list(data.items())[:MAX_FIELDS]:
        if isinstance(value, list):
            shown = "; ".join(_label(item) for item in value[:MAX_ITEMS])
            more = f" (+{len(value) - MAX_ITEMS} more)" if len(value) > MAX_ITEMS else ""
            bullets.append(f"- {key}: {shown or 'none'}{more}")
        else:
            bullets.append(f"- {key}: {_label(value)}")
    return bullets or ["- (empty result)"]


def respond(messages: list[dict], tools: list[dict]) -> LLMCompletion:
    """The offline model's whole decision for one request."""
    system = "\n".join(_content(m) for m in messages if m.get("role") == "system")
    conversation = [m for m in messages if m.get("role") != "system"]
    names = {spec.get("function", {}).get("name") for spec in tools}
    users = [_content(m) for m in conversation if m.get("role") == "user"]
    request = users[-1] if users else ""
    if "submit_report" in names:
        return investigate_offline(conversation)
    if conversation and conversation[-1].get("role") == "tool":
        return _final(summarise(_trailing_results(conversation)))
    if "AgentTool" in names:
        entry = best_specialist(request, parse_catalog(system))
        if entry is not None:
            return LLMCompletion(text="", tool_calls=[dispatch(entry, request)], finish_reason="tool_calls")
    calls = pick_tool_calls(request, tools)
    if calls:
        return LLMCompletion(text="", tool_calls=calls, finish_reason="tool_calls")
    return _final(_plain_answer(request, bool(tools)))


# ---- automatic investigations (docs/investigations.md): kept apart from the chat paths ----------

_INCIDENT_REF = re.compile(r"incident #(\d+)")


def investigate_offline(conversation: list[dict]) -> LLMCompletion:
    """The investigator's run without a model: read the incident with `get_incident_detail`, then
    submit a low-confidence report filled from what it returned, then say so in one line."""
    users = [_content(m) for m in conversation if m.get("role") == "user"]
    found = _INCIDENT_REF.search(users[0] if users else "")
    steps = [m for m in conversation if m.get("role") == "assistant" and m.get("tool_calls")]
    if found is None:
        return _final(f"No incident id in the brief; nothing to investigate. {LABEL}")
    if not steps:
        arguments = json.dumps({"incident_id": int(found.group(1))})
        call = ToolCall(id="offline_detail", name="get_incident_detail", arguments_raw=arguments)
        return LLMCompletion(text="", tool_calls=[call], finish_reason="tool_calls")
    results = _trailing_results(conversation)
    if results and results[0][0] == "get_incident_detail" and len(steps) == 1:
        report = _offline_report(results[0][1])
        if report is not None:
            call = ToolCall(id="offline_report", name="submit_report", arguments_raw=json.dumps(report))
            return LLMCompletion(text="", tool_calls=[call], finish_reason="tool_calls")
    told = results[0][1][:500] if results else ""
    return _final(f"Investigation finished by the offline stand-in. {told} {LABEL}".strip())


def _offline_report(detail_json: str) -> dict | None:
    try:
        detail = json.loads(detail_json)
        incident = detail["incident"]
    except (ValueError, KeyError, TypeError):
        return None
    devices, nodes = detail.get("devices") or [], detail.get("topology_nodes") or []
    services = incident.get("services") or []
    if devices:
        patient_zero = {"kind": "device", "name": devices[0]}
    elif nodes and isinstance(nodes[0], dict) and nodes[0].get("name"):
        patient_zero = {"kind": "topology_node", "name": nodes[0]["name"]}
    elif services:
        patient_zero = {"kind": "service", "name": services[0]}
    else:
        return None
    alerts = detail.get("alerts") or []
    changes = detail.get("recent_changes") or []
    finding = f"{len(alerts)} alert(s) in the group, {len(changes)} change event(s) around the start"
    return {
        "summary": f"{incident.get('title', 'The incident')}: a first read by the offline stand-in. {LABEL}",
        "root_cause": f"Not established by the offline stand-in; the alerts point at {patient_zero['name']}.",
        "patient_zero": patient_zero,
        "causal_chain": [f"{patient_zero['name']} alerting"],
        "symptoms": [str(a.get("name") or a)[:200] for a in alerts[:5] if isinstance(a, dict)],
        "evidence": [{"tool_call_id": "offline_detail", "finding": finding}],
        "confidence": 0.2,
        "confidence_word": "low",
        "next_actions": [{"action": "Configure a real LLM (OPENAI_API_KEY) for a full investigation."}],
        "ruled_out": [],
    }


def _plain_answer(request: str, had_tools: bool) -> str:
    if not request.strip():
        return f"Hello. Ask me about your systems. {LABEL}"
    why = "none of my tools fits it" if had_tools else "I have no tools here"
    return (
        f'You asked: "{request.strip()[:500]}". I cannot answer that on my own because {why}; '
        f"configure a real LLM (OPENAI_API_KEY) for open questions. {LABEL}"
    )


def _final(text: str) -> LLMCompletion:
    return LLMCompletion(text=text, finish_reason="stop")


class OfflineProvider:
    name = "offline"

    def default_model(self) -> str:
        return "offline"

    async def stream_chat(
        self, messages: list[dict], tools: list[dict], model: str | None = None, **options: Any
    ) -> AsyncIterator[LLMEvent]:
        completion = respond(messages, tools)
        for piece in re.findall(r"\S+\s*", completion.text):
            yield LLMDelta(piece)
        prompt_chars = sum(len(_content(m)) for m in messages) + len(json.dumps(tools))
        completion_chars = len(completion.text) + sum(len(c.arguments_raw) for c in completion.tool_calls)
        yield LLMCompletion(
            text=completion.text,
            tool_calls=completion.tool_calls,
            usage={"prompt_tokens": prompt_chars // 4, "completion_tokens": completion_chars // 4},
            finish_reason=completion.finish_reason,
            model="offline",
        )
