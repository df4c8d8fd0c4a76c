"""The offline model as an LLM provider: one decision per call (`respond`), streamed word by word
like a real model's answer, with usage estimated from the characters."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from agents_app.llm.base import LLMCompletion, LLMDelta, LLMEvent, ToolCall
from agents_app.toolsets.manifest import ROLE_DEVICE_LIST, ROLE_DISPATCH, ROLE_REPORT

from .completions import calling, final
from .conversation import (
    call_targets,
    content,
    current_turn,
    next_call_number,
    results_of,
    tool_steps,
    trailing_results,
    user_texts,
)
from .honesty import device_readings, led_answer, with_devices
from .investigation import investigate_offline
from .language import detect_language
from .planning import pick_tool_calls
from .reading import Facts
from .review import offline_verdict, review_brief_call
from .routing import best_specialist, direct_lookup, dispatch, parse_catalog, users_words
from .summaries import plain_answer, summarise
from .tool_knowledge import tool_for


@dataclass(frozen=True)
class _Request:
    """One call's inputs as the decision reads them."""

    system: str
    conversation: list[dict]
    tools: list[dict]
    names: set[str]
    text: str  # the last user message: the user's words, or a worker's brief

    @classmethod
    def of(cls, messages: list[dict], tools: list[dict]) -> _Request:
        users = user_texts(messages)
        return cls(
            system="\n".join(content(m) for m in messages if m.get("role") == "system"),
            conversation=[m for m in messages if m.get("role") != "system"],
            tools=tools,
            names={spec.get("function", {}).get("name") for spec in tools},
            text=users[-1] if users else "",
        )

    @property
    def coordinator(self) -> bool:
        return tool_for(ROLE_DISPATCH) in self.names


def respond(messages: list[dict], tools: list[dict]) -> LLMCompletion:
    """The offline model's whole decision for one request."""
    request = _Request.of(messages, tools)
    if tool_for(ROLE_REPORT) in request.names:
        return investigate_offline(request.conversation)
    held = review_brief_call(request.text)
    if held is not None:
        return final(offline_verdict(held))
    language = detect_language(users_words(request.text))
    turn = current_turn(request.conversation)
    readings = device_readings(request.text, results_of(turn, turn))
    first_id = next_call_number(request.conversation)
    if turn and turn[-1].get("role") == "tool":
        return _after_results(request, turn, readings, language, first_id)
    step = _first_step(request, first_id)
    if step is not None:
        return step
    answer = plain_answer(request.text, bool(tools), language)
    return final(led_answer(answer, request.text, readings, language, request.coordinator))


def _after_results(
    request: _Request, turn: list[dict], readings: dict[str, str], language: str, first_id: int
) -> LLMCompletion:
    """The step after tool results: the real look once the device list is in, else the answer."""
    device_list = tool_for(ROLE_DEVICE_LIST)
    steps = tool_steps(turn)
    looked_up = [c.get("function", {}).get("arguments") for c in steps[0]["tool_calls"]] if steps else []
    listed_devices = [name for name, _ in results_of(turn, turn)] == [device_list]
    if not request.coordinator and looked_up == ["{}"] and listed_devices:
        # The device list asked for below is in: now the real look, with the names it gave.
        others = [spec for spec in request.tools if spec.get("function", {}).get("name") != device_list]
        calls = pick_tool_calls(with_devices(request.text, readings), others, first_id)
        if calls:
            return calling(calls)
    conversation = request.conversation
    summary = summarise(trailing_results(conversation), language, call_targets(conversation))
    return final(led_answer(summary, request.text, readings, language, request.coordinator))


def _first_step(request: _Request, first_id: int) -> LLMCompletion | None:
    """The turn's first tool calls: a look-up or a dispatch from the coordinator, the device list
    or fitting reads from a worker; None when nothing fits."""
    device_list = tool_for(ROLE_DEVICE_LIST)
    if request.coordinator:
        lookup = direct_lookup(request.text, request.tools, first_id)
        if lookup:
            return calling(lookup)
        entry = best_specialist(request.text, parse_catalog(request.system))
        if entry is not None:
            return calling([dispatch(entry, request.text, f"offline_{first_id}")])
    elif Facts.of(request.text).devices and device_list in request.names:
        # A real model checks the names it was given before using them: list the devices first.
        return calling([ToolCall(id=f"offline_{first_id}", name=device_list, arguments_raw="{}")])
    calls = pick_tool_calls(request.text, request.tools, first_id)
    return calling(calls) if calls else None


class OfflineProvider:
    name = "offline"
    # It picks tools by their manifests' hints, not by reading schemas: it is sent every tool at
    # once rather than searching for deferred ones (docs/kernel.md "Deferred tools and ToolSearch").
    sees_every_tool = True

    def default_model(self) -> str:
        return "offline"

    async def stream_chat(
        self, messages: list[dict], tools: list[dict], model: str | None = None, **options: Any
    ) -> AsyncIterator[LLMEvent]:
        completion = respond(messages, tools)
        for piece in re.findall(r"\S+\s*", completion.text):
            yield LLMDelta(piece)
        prompt_chars = sum(len(content(m)) for m in messages) + len(json.dumps(tools))
        completion_chars = len(completion.text) + sum(len(c.arguments_raw) for c in completion.tool_calls)
        yield LLMCompletion(
            text=completion.text,
            tool_calls=completion.tool_calls,
            usage={"prompt_tokens": prompt_chars // 4, "completion_tokens": completion_chars // 4},
            finish_reason=completion.finish_reason,
            model="offline",
        )
