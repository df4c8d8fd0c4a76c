"""Many turns per worker process (docs/runtime.md, "Many turns per worker process"): a real Celery
worker carries concurrent turns on its own event loop, caps them, and a killed worker's turns are
reaped."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from agents_app.runtime.turns import astart_turn
from chat_app import services
from chat_app.groups import session_group
from chat_app.models import ChatSession, SessionStatus
from fakes.llm_routing import ByAgent, agent_of
from fakes.openai_server import call, tool_calls
from tests.support.celery_worker import HeldModel, celery_worker_process, identity_of

pytestmark = pytest.mark.django_db(transaction=True)

DEADLINE = 90.0


async def _chats(member, n: int) -> list[ChatSession]:
    return [await sync_to_async(services.start_chat)(member) for _ in range(n)]


async def _listen(chats: list[ChatSession]):
    layer = get_channel_layer()
    channel = await layer.new_channel()
    for chat in chats:
        await layer.group_add(session_group(chat.pk), channel)
    return layer, channel


async def _collect(layer, channel, kind: str, count: int) -> list[dict]:
    """Every event until `count` events of `kind` arrived."""
    seen: list[dict] = []
    async with asyncio.timeout(DEADLINE):
        while sum(1 for e in seen if e["event"] == kind) < count:
            seen.append((await layer.receive(channel))["event"])
    return seen


async def test_one_worker_process_runs_twenty_turns_at_once(member, fake_llm, tmp_path):
    held = HeldModel(expected=20)
    fake_llm.route(held)
    with celery_worker_process(fake_llm.base_url, str(tmp_path)) as worker:
        chats = await _chats(member, 20)
        layer, channel = await _listen(chats)
        for chat in chats:
            await astart_turn(chat, f"question {chat.pk}")
        assert await asyncio.to_thread(held.wait_all_in), f"only {held.peak} calls reached the model"
        assert held.peak == 20
        owners = {c.owner async for c in ChatSession.objects.filter(pk__in=[c.pk for c in chats])}
        assert owners == {identity_of(worker)}
        held.release()
        events = await _collect(layer, channel, "turn.ended", 20)
    ended = [e for e in events if e["event"] == "turn.ended"]
    assert {e["session"] for e in ended} == {c.pk for c in chats}
    assert all(e["status"] == "completed" and e["text"] == "done" for e in ended)
    assert await ChatSession.objects.filter(status=SessionStatus.IDLE, owner="").acount() == 20


async def test_the_per_process_cap_queues_the_excess(member, fake_llm, tmp_path):
    held = HeldModel(expected=2)
    fake_llm.route(held)
    with celery_worker_process(fake_llm.base_url, str(tmp_path), ONGRID_TURNS_PER_PROCESS="2") as worker:
        chats = await _chats(member, 3)
        layer, channel = await _listen(chats)
        for chat in chats:
            await astart_turn(chat, "hold on")
        assert await asyncio.to_thread(held.wait_all_in)
        started = await _collect(layer, channel, "turn.started", 2)
        waiting = [
            c.pk for c in chats if c.pk not in {e["session"] for e in started if e["event"] == "turn.started"}
        ]
        assert len(waiting) == 1
        queued = {e["session"] for e in started if e["event"] == "turn.queued"}
        assert waiting[0] in queued  # the page shows "queued" for the turn that waits
        row = await ChatSession.objects.aget(pk=waiting[0])
        assert row.status == SessionStatus.RUNNING and row.owner != identity_of(worker)
        assert held.open == 2
        held.release()
        await _collect(layer, channel, "turn.ended", 3)
    assert held.peak == 2 and held.served == 3
    assert await ChatSession.objects.filter(status=SessionStatus.IDLE, error="").acount() == 3


async def test_a_killed_worker_process_has_its_turns_reaped_with_the_reason(member, fake_llm, tmp_path):
    held = HeldModel(expected=3)
    router = ByAgent()
    brief = {"description": "du", "subagent_type": "specialist-disk", "prompt": "What fills /var on web-01?"}
    for _ in range(3):
        router.add("default", tool_calls(call("AgentTool", brief)))
        router.add("specialist-disk", held)
    fake_llm.route(router)
    try:
        with celery_worker_process(fake_llm.base_url, str(tmp_path)) as worker:
            chats = await _chats(member, 3)
            for chat in chats:
                await astart_turn(chat, "what fills /var?")
            assert await asyncio.to_thread(held.wait_all_in)
            worker.kill()
            await asyncio.to_thread(worker.wait, 20)
            gone = identity_of(worker)
    finally:
        held.release()
    assert {agent_of(r) for r in fake_llm.chat_requests} == {"default", "specialist-disk"}
    assert await sync_to_async(services.reap_orphans)() == 6
    async for chat in ChatSession.objects.filter(pk__in=[c.pk for c in chats]):
        assert chat.status == SessionStatus.IDLE and gone in chat.error and "reaper" in chat.error
    workers = [w async for w in ChatSession.objects.filter(parent_session__in=[c.pk for c in chats])]
    assert len(workers) == 3
    assert all(w.status == SessionStatus.FAILED and gone in w.error for w in workers)


async def test_the_inline_shape_caps_its_turns_and_shows_the_excess_as_queued(
    member, fake_llm, settings, inline_executor
):
    settings.CONFIG = dataclasses.replace(
        settings.CONFIG,
        llm="openai",
        openai_api_key="test-key",
        openai_base_url=fake_llm.base_url,
        model="fake-model",
        llm_max_retries=0,
        turns_per_process=2,
    )
    held = HeldModel(expected=2)
    fake_llm.route(held)
    chats = await _chats(member, 3)
    layer, channel = await _listen(chats)
    turns = [(await astart_turn(chat, "hold on"))[1] for chat in chats]
    assert await asyncio.to_thread(held.wait_all_in)
    seen = await _collect(layer, channel, "turn.queued", 1)
    queued = [e["session"] for e in seen if e["event"] == "turn.queued"]
    assert queued == [chats[2].pk]  # the page shows "queued" for the turn over the cap
    assert chats[2].pk not in {e["session"] for e in seen if e["event"] == "turn.started"}
    assert held.open == 2
    row = await ChatSession.objects.aget(pk=chats[2].pk)
    assert row.status == SessionStatus.RUNNING
    held.release()
    await asyncio.gather(*turns)
    assert held.peak == 2 and held.served == 3
    assert (
        await ChatSession.objects.filter(
            pk__in=[c.pk for c in chats], status=SessionStatus.IDLE, error=""
        ).acount()
        == 3
    )
