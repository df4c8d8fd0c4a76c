"""Prompt caching (docs/kernel.md, "What a model request holds"): the static part of every request
(system prompt and tool schemas) is a byte-identical prefix across steps and turns, and the cached
tokens the provider reports are recorded per call."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents_app.runtime.core import Runtime
from audit_app.models import LLMCall
from chat_app import services
from fakes.openai_server import call, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

CACHED = {"prompt_tokens": 1500, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 1280}}


def _prefix(body: dict) -> str:
    """The part of a request a provider can cache: tool schemas and the leading system prompt."""
    return json.dumps([body.get("tools"), body["messages"][0]], ensure_ascii=False)


async def _turn(chat_id: int, text_: str) -> None:
    await services.abegin_turn(chat_id, text_)
    assert (await Runtime().run_turn(chat_id)).status == "completed"


async def test_the_static_prefix_is_byte_identical_across_steps_turns_and_chats(member, agents_llm):
    brief = {"description": "du", "subagent_type": "specialist-disk", "prompt": "What fills /var on web-01?"}
    agents_llm.add("default", tool_calls(call("AgentTool", brief)), text("Logs fill /var."))
    agents_llm.add("specialist-disk", text("/var/log 38G"))
    agents_llm.add("default", text("second turn"), text("another chat"))
    chat = await sync_to_async(services.start_chat)(member)
    await _turn(chat.pk, "what fills /var on web-01?")
    await _turn(chat.pk, "and now?")
    other = await sync_to_async(services.start_chat)(member)
    await _turn(other.pk, "hello")

    asked = agents_llm.seen["default"]
    assert len(asked) == 4  # two steps, a second turn, another chat
    assert len({_prefix(r.body) for r in asked}) == 1
    assert asked[0].body["messages"][0]["role"] == "system" and asked[0].body["tools"]
    for request in asked:  # what changes per step and turn comes after the history
        last = request.body["messages"][-1]
        assert last["role"] == "system" and last["content"].startswith("<system-reminder>")
        assert all("<system-reminder>" not in (m.get("content") or "") for m in request.body["messages"][:-1])


async def test_cached_prompt_tokens_reported_by_the_provider_are_recorded_per_call(member, agents_llm):
    agents_llm.add("default", text("first", usage=CACHED), text("no details"))
    chat = await sync_to_async(services.start_chat)(member)
    await _turn(chat.pk, "one")
    await _turn(chat.pk, "two")
    rows = [row async for row in LLMCall.objects.filter(session_id=chat.pk).order_by("started_at", "pk")]
    assert [(r.prompt_tokens, r.cached_tokens) for r in rows] == [(1500, 1280), (11, 0)]
