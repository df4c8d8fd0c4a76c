"""A worker's choice of tool calls: up to three read tools whose names and descriptions fit the
request, their required arguments filled from its words (device names, paths, URLs, numbers) or
the schema's defaults."""

from __future__ import annotations

import json
from typing import Any

from agents_app.llm.base import ToolCall
from agents_app.toolsets.contract import UNCONFIGURED

from .reading import Facts, request_words, words
from .tool_knowledge import is_auto_picked, is_control_tool
from .vocabulary import MUTATING_WORDS

MAX_TOOLS = 3
_MISSING = object()
_TEXT_KEYS = {"q", "query", "question", "text", "search", "prompt", "brief", "message", "keyword", "keywords",
              "topic", "description", "pattern", "reason"}  # fmt: skip
_DEVICE_KEYS = ("device", "host", "server", "node", "target", "instance", "machine")


def fill_argument(key: str, spec: dict, facts: Facts) -> Any:
    """A plausible value for one argument, or _MISSING when the request does not supply one."""
    if "default" in spec:
        return spec["default"]
    if spec.get("enum"):
        return spec["enum"][0]
    name = key.lower()
    if any(part in name for part in _DEVICE_KEYS):
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
    return _by_kind(name, spec, facts)


def _by_kind(name: str, spec: dict, facts: Facts) -> Any:
    """An argument's value from its query language or its type, when its name said nothing."""
    kind = spec.get("type", "string")
    hint = f"{name} {spec.get('description', '')}".lower()
    if "promql" in hint:
        return "up"
    if "logql" in hint:
        return '{job=~".+"}'
    if "traceql" in hint:
        return "{}"
    if kind in ("integer", "number"):
        # An id nobody wrote as one is not guessed: "incident 1" would be a made-up answer.
        if "incident" in name or name.endswith("_id"):
            return facts.ids[0] if facts.ids else _MISSING
        return facts.numbers[0] if facts.numbers else spec.get("minimum", 1)
    if kind == "boolean":
        return False
    if kind == "array":
        return []
    if kind == "string" and (name in _TEXT_KEYS or name.endswith("_query")):
        return facts.text
    return _MISSING


def plan_arguments(schema: dict, facts: Facts) -> dict | None:
    """The required arguments of a tool, or None when the request cannot fill one of them."""
    arguments = {}
    properties = schema.get("properties", {})
    for key in schema.get("required", []):
        value = fill_argument(key, properties.get(key, {}), facts)
        if value is _MISSING:
            return None
        arguments[key] = value
    return arguments


def pick_tool_calls(request: str, tools: list[dict], first_id: int = 1) -> list[ToolCall]:
    """Up to three read-looking tools whose names/descriptions share words with the request;
    their ids are `offline_<n>` from `first_id` on."""
    asked, facts = request_words(request), Facts.of(request)
    ranked = []
    for spec in tools:
        function = spec.get("function", {})
        name = function.get("name", "")
        name_words = words(name.replace("_", " "))
        if is_control_tool(name) or name_words & MUTATING_WORDS or not is_auto_picked(name):
            continue
        if UNCONFIGURED in function.get("description", ""):
            continue  # its back end is missing here: the call could only say so
        score = 2 * len(asked & name_words) + len(asked & words(function.get("description", "")))
        if not score:
            continue
        arguments = plan_arguments(function.get("parameters") or {}, facts)
        if arguments is not None:
            ranked.append((-score, name, arguments))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return [
        ToolCall(
            id=f"offline_{first_id + index}",
            name=name,
            arguments_raw=json.dumps(arguments, ensure_ascii=False),
        )
        for index, (_, name, arguments) in enumerate(ranked[:MAX_TOOLS])
    ]
