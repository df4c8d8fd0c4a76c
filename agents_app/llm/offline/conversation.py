"""Reading the conversation the kernel sends: message texts, this turn's steps, the results of the
last tool-call step, and the next free call id."""

from __future__ import annotations

import json
import re

_TARGET_KEYS = ("device", "host", "server", "node", "target", "instance")


def content(message: dict) -> str:
    text = message.get("content")
    if isinstance(text, list):  # multi-part content: keep the text parts
        return " ".join(part.get("text", "") for part in text if isinstance(part, dict))
    return text or ""


def user_texts(conversation: list[dict]) -> list[str]:
    return [content(m) for m in conversation if m.get("role") == "user"]


def tool_steps(conversation: list[dict]) -> list[dict]:
    """The assistant messages that call tools."""
    return [m for m in conversation if m.get("role") == "assistant" and m.get("tool_calls")]


def _call_names(conversation: list[dict]) -> dict[str, str]:
    return {
        call.get("id", ""): call.get("function", {}).get("name", "tool")
        for message in conversation
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or []
    }


def results_of(messages: list[dict], conversation: list[dict]) -> list[tuple[str, str]]:
    """(tool name, content) of the tool messages among `messages`, named by the calls of `conversation`."""
    names = _call_names(conversation)
    return [
        (names.get(m.get("tool_call_id", ""), "tool"), content(m))
        for m in messages
        if m.get("role") == "tool"
    ]


def trailing_results(conversation: list[dict]) -> list[tuple[str, str]]:
    """(tool name, content) of the tool messages answering the last assistant tool-call step."""
    results = []
    for message in reversed(conversation):
        if message.get("role") != "tool":
            break
        results.append(message)
    return results_of(list(reversed(results)), conversation)


def current_turn(conversation: list[dict]) -> list[dict]:
    """The messages after the last user message: this turn's steps so far."""
    for index in range(len(conversation) - 1, -1, -1):
        if conversation[index].get("role") == "user":
            return conversation[index + 1 :]
    return list(conversation)


def next_call_number(conversation: list[dict]) -> int:
    """The next free `offline_<n>`: past every id the session's history shows, so two dispatches of
    one session never share an id (the audit tree links a dispatch to its worker by it)."""
    highest = 0
    for message in conversation:
        for call in message.get("tool_calls") or []:
            found = re.fullmatch(r"offline_(\d+)", str(call.get("id", "")))
            highest = max(highest, int(found.group(1)) if found else 0)
    calls = sum(len(message.get("tool_calls") or []) for message in conversation)
    return max(highest, calls) + 1


def call_targets(conversation: list[dict]) -> list[str]:
    """The device each call of the last tool-call step ran on ("" for none), in the order of its
    results, so a summary can say where each reading comes from."""
    steps = tool_steps(conversation)
    targets = []
    for call in steps[-1]["tool_calls"] if steps else []:
        try:
            arguments = json.loads(call.get("function", {}).get("arguments") or "{}")
        except ValueError:
            arguments = {}
        found = next(
            (arguments[k] for k in _TARGET_KEYS if isinstance(arguments, dict) and arguments.get(k)), ""
        )
        targets.append(str(found))
    return targets
