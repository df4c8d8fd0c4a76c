"""Stop within a second: the in-flight model request is closed, a running local command is killed,
and the rows close `killed` with "stopped by <user>" (inline executor, real SDK, fake LLM)."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async

from agents_app.runtime import core as runtime_module
from agents_app.runtime.core import Runtime
from audit_app.models import AuditLog
from chat_app import services
from chat_app.models import ChatMessage, ChatSession, MessageKind, SessionStatus
from fakes.openai_server import call, held, text, tool_calls
from ops_app.models import Device
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections"),
]


@pytest.fixture
def chat(member):
    return services.start_chat(member)


async def wait_for(predicate, seconds: float = 20.0) -> None:
    """Poll an observable condition (a request reached the fake, a process exists) with a deadline."""
    deadline = time.monotonic() + seconds
    while not await predicate():
        assert time.monotonic() < deadline, "the condition was not reached in time"
        await asyncio.sleep(0.02)


async def start(chat, question: str, runtime: Runtime) -> asyncio.Task:
    await services.abegin_turn(chat.pk, question)
    return asyncio.create_task(runtime.run_turn(chat.pk))


def requests_of(fake_llm, count: int):
    async def reached() -> bool:
        return len(fake_llm.chat_requests) >= count

    return reached


async def test_stop_closes_a_model_request_that_never_answers_within_a_second(chat, agents_llm, fake_llm):
    agents_llm.add("default", held(60))
    runtime = Runtime()
    turn = await start(chat, "why is checkout slow?", runtime)
    await wait_for(requests_of(fake_llm, 1))

    stopped_at = time.monotonic()
    await runtime.stop_session(chat.pk, by="alice")
    result = await asyncio.wait_for(turn, 10)

    assert time.monotonic() - stopped_at < 1.0
    assert result.status == "killed" and result.error == "stopped by alice"
    assert len(fake_llm.hangups) == 1  # the HTTP request itself was closed, not waited out
    row = await ChatSession.objects.aget(pk=chat.pk)
    assert row.status == SessionStatus.IDLE and row.error == "stopped by alice"
    note = await ChatMessage.objects.filter(session=chat, kind=MessageKind.STOPPED).aget()
    assert note.content == (
        "Stopped by alice before the answer was complete. Cut off: waiting for the model's reply."
    )


async def test_the_next_turn_is_told_what_the_stop_cut_off(chat, agents_llm, fake_llm):
    agents_llm.add("default", held(60), text("Picking up where we stopped."))
    runtime = Runtime()
    turn = await start(chat, "scan everything", runtime)
    await wait_for(requests_of(fake_llm, 1))
    await runtime.stop_session(chat.pk, by="alice")
    await asyncio.wait_for(turn, 10)

    await (await start(chat, "go on", runtime))
    replayed = [m.get("content") for m in agents_llm.seen["default"][1].messages if m["role"] == "assistant"]
    assert any("Stopped by alice" in (content or "") for content in replayed)


async def test_a_stop_from_another_process_is_pushed_not_polled(chat, agents_llm, fake_llm, monkeypatch):
    monkeypatch.setattr(runtime_module, "STOP_POLL_SECONDS", 30.0)  # only the push can be this fast
    agents_llm.add("default", held(60))
    turn = await start(chat, "why is checkout slow?", Runtime())
    await wait_for(requests_of(fake_llm, 1))

    stopped_at = time.monotonic()
    await Runtime().stop_session(chat.pk, by="bob")  # another runtime: no local token to cancel
    result = await asyncio.wait_for(turn, 10)

    assert time.monotonic() - stopped_at < 1.0
    assert result.status == "killed" and result.error == "stopped by bob"
    assert len(fake_llm.hangups) == 1


def _pid_reading(path: Path) -> int | None:
    """The pid of a live process whose command line names `path` (the command the worker runs)."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(path).encode() in cmdline:
            return int(entry)
    return None


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


async def test_stop_kills_a_local_command_that_would_block_for_ever(chat, org, agents_llm, tmp_path):
    await Device.objects.acreate(organization=org, name="web-01", transport=Device.Transport.LOCAL)
    fifo = tmp_path / "never-written"
    os.mkfifo(fifo)  # `cat` blocks on it until a writer appears, which never happens
    agents_llm.add(
        "default",
        tool_calls(
            call(
                "AgentTool",
                {"description": "Read the pipe", "subagent_type": "specialist-disk", "prompt": "cat it"},
            )
        ),
    )
    agents_llm.add(
        "specialist-disk", tool_calls(call("host_bash", {"device": "web-01", "command": f"cat {fifo}"}))
    )
    runtime = Runtime()
    turn = await start(chat, "read the pipe on web-01", runtime)

    async def running() -> bool:
        return _pid_reading(fifo) is not None

    await wait_for(running)
    pid = _pid_reading(fifo)
    stopped_at = time.monotonic()
    await runtime.stop_session(chat.pk, by="alice")
    result = await asyncio.wait_for(turn, 10)

    assert time.monotonic() - stopped_at < 1.0
    assert not _alive(pid)
    assert result.status == "killed"
    worker = await ChatSession.objects.aget(parent_session=chat)
    assert worker.status == SessionStatus.KILLED and worker.error == "stopped by alice"
    row = await AuditLog.objects.filter(session_id=worker.pk, tool="host_bash").aget()
    assert row.status == "killed" and "stopped by alice" in row.error
    note = await ChatMessage.objects.filter(session=chat, kind=MessageKind.STOPPED).aget()
    assert "Cut off: running a specialist-disk worker (Read the pipe)" in note.content


async def test_a_stopped_tile_tells_the_coordinator_who_stopped_it(chat, agents_llm, fake_llm):
    agents_llm.add(
        "default",
        tool_calls(
            call("AgentTool", {"description": "Slow", "subagent_type": "specialist-disk", "prompt": "go"})
        ),
        text("The worker was stopped by the user."),
    )
    agents_llm.add("specialist-disk", held(60))
    runtime = Runtime()
    turn = await start(chat, "scan", runtime)
    await wait_for(requests_of(fake_llm, 2))
    worker = await ChatSession.objects.aget(parent_session=chat)

    stopped_at = time.monotonic()
    await runtime.stop_worker(worker.pk, by="alice")
    result = await asyncio.wait_for(turn, 10)

    assert time.monotonic() - stopped_at < 1.5
    assert result.status == "completed"
    told = [m for m in agents_llm.seen["default"][1].messages if m["role"] == "tool"][0]["content"]
    assert '"killed"' in told and "stopped by alice" in told
    worker = await ChatSession.objects.aget(pk=worker.pk)
    assert worker.status == SessionStatus.KILLED and worker.error == "stopped by alice"


async def test_a_message_during_a_turn_is_refused_with_the_running_turn_id(chat, agents_llm, fake_llm):
    agents_llm.add("default", held(60))
    runtime = Runtime()
    turn = await start(chat, "first", runtime)
    first = await ChatMessage.objects.filter(session=chat, role="user").alatest("seq")
    with pytest.raises(services.TurnInProgress) as refused:
        await services.abegin_turn(chat.pk, "second")
    assert refused.value.turn_id == first.pk
    await runtime.stop_session(chat.pk, by="alice")
    await asyncio.wait_for(turn, 10)
    await sync_to_async(services.begin_turn)(chat.pk, "second")  # accepted once the turn ended


async def test_a_stop_only_on_the_row_reaches_its_turn_and_leaves_the_sibling_turn_running(
    chat, member, agents_llm, fake_llm, monkeypatch
):
    """The push lost (the API's Stop in a process whose channel layer is down): the process's one
    poller reads every running turn's flag in a single query and stops just the flagged turn."""
    polled: list[set[int]] = []
    real = runtime_module._stop_flagged

    async def spy(ids):
        polled.append(set(ids))
        return await real(ids)

    monkeypatch.setattr(runtime_module, "_stop_flagged", spy)
    agents_llm.add("default", held(60), held(60))
    runtime = Runtime()
    other = await sync_to_async(services.start_chat)(member)
    flagged, sibling = await start(chat, "first", runtime), await start(other, "second", runtime)
    await wait_for(requests_of(fake_llm, 2))

    await sync_to_async(services.request_stop)(chat.pk, "stopped by carol")  # the row only, no push
    result = await asyncio.wait_for(flagged, 10)

    assert result.status == "killed" and result.error == "stopped by carol"
    assert not sibling.done()
    assert (await ChatSession.objects.aget(pk=other.pk)).status == SessionStatus.RUNNING
    assert any({chat.pk, other.pk} <= ids for ids in polled)  # one query for both turns
    await runtime.stop_session(other.pk, by="alice")
    assert (await asyncio.wait_for(sibling, 10)).error == "stopped by alice"
