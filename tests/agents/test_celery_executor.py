"""The scale-out shape: turns on a real Celery worker over real Redis, events back over the Redis
channel layer, Stop across processes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from agents_app.runtime.turns import astart_turn
from chat_app import services
from chat_app.groups import session_group
from chat_app.models import ChatSession, SessionStatus
from fakes.openai_server import call, text, tool_calls
from tests.support.django_subprocess import ROOT, child_env
from tests.support.required import require

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def celery_worker(fake_llm, tmp_path):
    require(bool(settings.CONFIG.redis_url), "Redis (REDIS_URL) for the Celery executor")
    env = child_env(
        REDIS_URL=settings.CONFIG.redis_url,
        ONGRID_LLM="openai",
        OPENAI_API_KEY="test-key",
        OPENAI_BASE_URL=fake_llm.base_url,
        ONGRID_MODEL="fake-model",
        ONGRID_LLM_MAX_RETRIES="0",
        ONGRID_DATA_DIR=str(tmp_path),
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "ongrid_site",
            "worker",
            "--pool=solo",
            "-l",
            "warning",
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"test-{time.monotonic_ns()}@%h",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_until_ready(proc)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _wait_until_ready(proc, timeout: float = 60.0) -> None:
    from ongrid_site.celery import app

    deadline = time.monotonic() + timeout
    while not app.control.ping(timeout=0.5):
        if proc.poll() is not None:
            pytest.fail(f"celery worker exited: {proc.stderr.read().decode()[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail("celery worker did not answer a ping in time")


async def _listen(session_id: int):
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.group_add(session_group(session_id), channel)
    return layer, channel


EVENT_DEADLINE = 60.0


async def _events_until(layer, channel, kind: str) -> list[dict]:
    seen = []
    async with asyncio.timeout(EVENT_DEADLINE):
        while True:
            message = await layer.receive(channel)
            seen.append(message["event"])
            if message["event"]["event"] == kind:
                return seen


async def test_a_turn_runs_on_the_celery_worker_and_streams_back_over_redis(
    member, agents_llm, celery_worker
):
    assert settings.ONGRID_EXECUTOR == "celery"
    chat = await sync_to_async(services.start_chat)(member)
    agents_llm.add(
        "default",
        tool_calls(
            call(
                "AgentTool",
                {
                    "description": "du",
                    "subagent_type": "specialist-disk",
                    "prompt": "On web-01 what fills /var?",
                },
            )
        ),
        text("/var/log holds 38G."),
    )
    agents_llm.add("specialist-disk", text("/var/log 38G"))
    layer, channel = await _listen(chat.pk)
    await astart_turn(chat, "what fills /var on web-01?")
    events = await _events_until(layer, channel, "turn.ended")
    kinds = [e["event"] for e in events]
    assert "worker.started" in kinds and "text.delta" in kinds
    assert events[-1]["text"] == "/var/log holds 38G."
    chat = await ChatSession.objects.aget(pk=chat.pk)
    assert chat.status == SessionStatus.IDLE and chat.owner == ""
    worker = await ChatSession.objects.aget(parent_session=chat)
    assert worker.status == SessionStatus.COMPLETED and worker.closed_at is not None
    assert worker.owner == "" and worker.result == "/var/log 38G"


async def test_stop_from_this_process_kills_a_worker_running_on_celery(member, agents_llm, celery_worker):
    from agents_app.runtime.core import Runtime

    release = threading.Event()

    def slow(request):
        release.wait(timeout=60)
        return tool_calls(call("query_promql", {"query": "up"}))

    chat = await sync_to_async(services.start_chat)(member)
    agents_llm.add(
        "default",
        tool_calls(
            call(
                "AgentTool",
                {"description": "slow", "subagent_type": "specialist-disk", "prompt": "Slow job on web-01."},
            )
        ),
        text("stopped"),
    )
    agents_llm.add("specialist-disk", slow, text("never"))
    layer, channel = await _listen(chat.pk)
    await astart_turn(chat, "slow")
    await _events_until(layer, channel, "worker.status")  # running, in the worker process
    assert await Runtime().stop_session(chat.pk) >= 1  # no local token here: only the row flag
    release.set()
    await _events_until(layer, channel, "turn.ended")
    worker = await ChatSession.objects.aget(parent_session=chat)
    assert worker.status == SessionStatus.KILLED and worker.closed_at is not None


async def test_stop_reaches_a_model_call_on_the_celery_worker_within_a_second(
    member, agents_llm, fake_llm, celery_worker
):
    from agents_app.runtime.core import Runtime
    from fakes.openai_server import held

    chat = await sync_to_async(services.start_chat)(member)
    agents_llm.add("default", held(60))
    layer, channel = await _listen(chat.pk)
    await astart_turn(chat, "why is checkout slow?")
    await _events_until(layer, channel, "turn.started")
    deadline = time.monotonic() + EVENT_DEADLINE
    while not fake_llm.chat_requests:  # the worker's model request is in flight (and held)
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)

    stopped_at = time.monotonic()
    await Runtime().stop_session(chat.pk, by="alice")  # this process runs nothing: the stop is pushed
    ended = (await _events_until(layer, channel, "turn.ended"))[-1]

    assert time.monotonic() - stopped_at < 1.0
    assert ended["status"] == "killed" and ended["error"] == "stopped by alice"
    assert ended["stopped"].startswith("Stopped by alice")
    assert len(fake_llm.hangups) == 1  # the worker closed its HTTP request to the model
