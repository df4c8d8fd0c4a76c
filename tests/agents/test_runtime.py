"""The multi-agent runtime against the fake LLM through the real SDK (inline executor)."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from asgiref.sync import sync_to_async

from agents_app.runtime import dedupe, events
from agents_app.runtime.control_tools import task_stop_tool
from agents_app.runtime.core import Runtime
from agents_app.toolsets.contract import ToolContext
from audit_app.models import AuditLog
from chat_app import services
from chat_app.models import ChatMessage, ChatSession, SessionStatus
from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh_dedupe(monkeypatch):
    monkeypatch.setattr(dedupe, "DISPATCHES", dedupe.DispatchCache())


@pytest.fixture
def chat(member):
    return services.start_chat(member)


async def ask(chat, question: str, runtime: Runtime | None = None, listeners=None):
    await services.abegin_turn(chat.pk, question)
    return await (runtime or Runtime()).run_turn(chat.pk, listeners=listeners)


def dispatch(subagent: str, prompt: str, description: str = "task", id: str | None = None) -> dict:
    return call("AgentTool", {"description": description, "subagent_type": subagent, "prompt": prompt}, id=id)


def workers_of(chat) -> list[ChatSession]:
    return list(ChatSession.objects.filter(parent_session=chat).order_by("pk"))


async def test_two_specialists_run_in_parallel_and_the_coordinator_weaves_both(chat, agents_llm):
    both_asked = threading.Barrier(2, timeout=20)

    def worker_answer(answer):
        def reply(request):
            both_asked.wait()  # only returns when the other worker is also waiting: proof of parallelism
            return text(answer)

        return reply

    agents_llm.add(
        "default",
        tool_calls(
            dispatch("specialist-disk", "On web-01 find what fills /var.", "Disk usage on web-01", id="d1"),
            dispatch("specialist-compute", "On web-01 find the top CPU processes.", "CPU on web-01", id="c1"),
        ),
        lambda request: text("Disk: " + tool_messages(request)[0]["content"][:60]),
    )
    agents_llm.add("specialist-disk", worker_answer("/var/log holds 38G of rotated logs"))
    agents_llm.add("specialist-compute", worker_answer("java pid 4242 uses 340% CPU"))

    result = await ask(chat, "web-01 is slow and its disk is filling up")

    assert result.status == "completed"
    final_request = agents_llm.seen["default"][-1]
    results = " ".join(m["content"] for m in tool_messages(final_request))
    assert "38G of rotated logs" in results and "340% CPU" in results
    workers = await sync_to_async(workers_of)(chat)
    assert {w.agent_id for w in workers} == {"specialist-disk", "specialist-compute"}
    for worker in workers:
        assert worker.status == SessionStatus.COMPLETED and worker.closed_at is not None
        assert worker.root_session_id == chat.pk and worker.spawned_by_call in {"d1", "c1"}
    chat = await ChatSession.objects.aget(pk=chat.pk)
    assert chat.status == SessionStatus.IDLE
    last = await ChatMessage.objects.filter(session=chat).order_by("-seq").afirst()
    assert last.role == "assistant" and last.content.startswith("Disk: ")


async def test_workers_cannot_nest(chat, agents_llm):
    agents_llm.add(
        "default", tool_calls(dispatch("specialist-disk", "Check /var on web-01.")), lambda r: text("done")
    )
    agents_llm.add(
        "specialist-disk",
        tool_calls(dispatch("specialist-compute", "nested brief")),
        lambda request: text("could not nest: " + tool_messages(request)[-1]["content"][:200]),
    )
    await ask(chat, "check the disk")
    worker_request = agents_llm.seen["specialist-disk"][0]
    assert "AgentTool" not in worker_request.tool_names
    assert not {"SendMessage", "TaskStop"} & set(worker_request.tool_names)
    error = tool_messages(agents_llm.seen["specialist-disk"][1])[-1]["content"]
    assert "no tool named 'AgentTool'" in error
    assert await ChatSession.objects.filter(root_session=chat).acount() == 1  # no grandchild


@pytest.mark.parametrize("forbidden", ["default", "reviewer", "specialist-nope"])
async def test_default_reviewer_and_unknown_personas_are_refused(chat, agents_llm, forbidden):
    agents_llm.add("default", tool_calls(dispatch(forbidden, "review this")), lambda r: text("ok"))
    await ask(chat, "please review")
    message = tool_messages(agents_llm.seen["default"][1])[0]["content"]
    assert "Valid values" in message and "specialist-disk" in message
    assert "reviewer" not in message.split("Valid values", 1)[1]
    assert await ChatSession.objects.filter(parent_session=chat).acount() == 0


async def test_identical_dispatch_is_deduped_within_120_seconds_and_not_after(chat, agents_llm, monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(dedupe, "DISPATCHES", dedupe.DispatchCache(clock=lambda: clock[0]))
    brief = "On web-01 list the 5 largest directories under /var."
    agents_llm.add(
        "default",
        tool_calls(dispatch("specialist-disk", brief)),
        tool_calls(dispatch("specialist-disk", "On web-01 list the 5 largest  directories under /var.\n")),
        lambda r: text("answered"),
    )
    agents_llm.add("specialist-disk", text("/var/log 38G"))
    await ask(chat, "what fills /var on web-01?")
    second = json.loads(tool_messages(agents_llm.seen["default"][2])[-1]["content"])
    assert second["status"] == "deduped" and second["result"] == "/var/log 38G"
    assert "already dispatched" in second["hint"]
    assert await ChatSession.objects.filter(parent_session=chat).acount() == 1
    assert await AuditLog.objects.filter(session=chat, tool="AgentTool", status="deduped").acount() == 1

    clock[0] += 121
    agents_llm.add("default", tool_calls(dispatch("specialist-disk", brief)), lambda r: text("again"))
    agents_llm.add("specialist-disk", text("/var/log 39G"))
    await ask(chat, "and now?")
    assert await ChatSession.objects.filter(parent_session=chat).acount() == 2


async def test_redirect_stub_steers_the_coordinator_to_agenttool(chat, agents_llm):
    agents_llm.add(
        "default",
        tool_calls(call("host_du_summary", {"device": "web-01", "path": "/var"})),
        tool_calls(dispatch("specialist-disk", "On web-01 summarise du of /var.")),
        lambda r: text("final"),
    )
    agents_llm.add("specialist-disk", text("/var/log 38G"))
    await ask(chat, "du /var on web-01")
    payload = json.loads(tool_messages(agents_llm.seen["default"][1])[0]["content"])
    assert payload["status"] == "redirect" and 'subagent_type="specialist-disk"' in payload["suggested_call"]
    assert await AuditLog.objects.filter(session=chat, tool="host_du_summary", status="redirect").aexists()
    worker = await ChatSession.objects.aget(parent_session=chat)
    assert worker.status == SessionStatus.COMPLETED


async def test_a_worker_that_crashes_ends_failed_and_the_coordinator_is_told(chat, agents_llm, monkeypatch):
    async def explode(*args, **kwargs):
        raise RuntimeError("disk specialist blew up")

    monkeypatch.setattr(Runtime, "_drive_worker", explode)
    agents_llm.add("default", tool_calls(dispatch("specialist-disk", "Check /var.")), lambda r: text("sorry"))
    await ask(chat, "check disk")
    worker = await ChatSession.objects.aget(parent_session=chat)
    assert worker.status == SessionStatus.FAILED and worker.closed_at is not None
    assert "blew up" in worker.error
    told = json.loads(tool_messages(agents_llm.seen["default"][1])[0]["content"])
    assert told["status"] == "failed" and "blew up" in told["error"]


async def test_a_turn_that_crashes_keeps_what_the_person_already_saw(chat, agents_llm):
    """A crash after the coordinator streamed some words (here a listener that fails, standing in
    for a database gone for good): the turn ends failed with the reason, and those words stay."""

    async def break_on_tool(event):
        if isinstance(event, events.ToolStarted):
            raise RuntimeError("the database went away")

    first = "Checking web-01's disks first."
    agents_llm.add("default", tool_calls(dispatch("specialist-disk", "Check /var."), text=first))
    await ask(chat, "is web-01 full?", listeners=[break_on_tool])
    await chat.arefresh_from_db()
    assert chat.status == SessionStatus.IDLE and "the database went away" in chat.error
    rows = ChatMessage.objects.filter(session=chat).order_by("pk")
    said = [(m.role, m.kind, m.content) async for m in rows]
    assert said[0][2] == "is web-01 full?"
    assert said[1][0] == "assistant" and said[1][2] == first
    assert said[2][1] == "error" and "the database went away" in said[2][2]


def running_signal() -> tuple[asyncio.Event, list]:
    """An event set when the runtime announces a running worker (its published event)."""
    running = asyncio.Event()

    async def listen(event):
        if isinstance(event, events.WorkerStatus) and event.status == "running":
            running.set()

    return running, [listen]


async def test_taskstop_kills_a_running_worker_and_the_coordinator_is_told(chat, agents_llm):
    release = threading.Event()

    def slow(request):
        release.wait(timeout=30)
        return text("too late")

    agents_llm.add(
        "default", tool_calls(dispatch("specialist-disk", "Slow job.")), lambda r: text("stopped it")
    )
    agents_llm.add("specialist-disk", slow)
    runtime = Runtime()
    running, listeners = running_signal()
    turn = asyncio.create_task(ask(chat, "slow disk check", runtime, listeners))
    await asyncio.wait_for(running.wait(), 20)
    worker = await ChatSession.objects.aget(parent_session=chat)
    stop = task_stop_tool(runtime, chat)
    ctx = ToolContext(organization_id=chat.organization_id, session_id=chat.pk)
    assert (await stop.handler(ctx, task_id=worker.pk))["status"] == "stopping"
    release.set()
    result = await asyncio.wait_for(turn, 30)
    assert result.status == "completed" and result.text == "stopped it"
    worker = await ChatSession.objects.aget(pk=worker.pk)
    assert worker.status == SessionStatus.KILLED and worker.closed_at is not None
    told = json.loads(tool_messages(agents_llm.seen["default"][1])[0]["content"])
    assert told["status"] == "killed"
    again = await stop.handler(ctx, task_id=worker.pk)  # idempotent
    assert again["status"] == "killed" and again["note"] == "already finished"


async def test_a_stop_flag_set_by_another_process_kills_the_worker(chat, agents_llm):
    release = threading.Event()
    agents_llm.add("default", tool_calls(dispatch("specialist-disk", "Slow job.")), lambda r: text("ok"))

    def slow_then_tool(request):
        release.wait(timeout=30)
        return tool_calls(call("query_promql", {"query": "up"}))

    # The stop is seen at the worker's next step: after this call's tool, before its next LLM call.
    agents_llm.add("specialist-disk", slow_then_tool, text("never"))
    running, listeners = running_signal()
    turn = asyncio.create_task(ask(chat, "slow", Runtime(), listeners))
    await asyncio.wait_for(running.wait(), 20)
    worker = await ChatSession.objects.aget(parent_session=chat)
    # What the API's Stop does from any process: only the row flag, no in-process token.
    await sync_to_async(services.request_stop)(worker.pk)
    release.set()
    await asyncio.wait_for(turn, 30)
    worker = await ChatSession.objects.aget(pk=worker.pk)
    assert worker.status == SessionStatus.KILLED and worker.closed_at is not None
    assert len(agents_llm.seen["specialist-disk"]) == 1  # stopped before its next LLM call


async def test_history_of_a_long_lived_session_is_rebuilt_for_the_next_turn(chat, agents_llm):
    agents_llm.add("default", text("The incident is INC-7."), text("It started at 14:02."))
    await ask(chat, "which incident is firing?")
    await ask(chat, "when did it start?")
    second = agents_llm.seen["default"][1]
    contents = [m.get("content") for m in second.messages if m.get("role") in ("user", "assistant")]
    assert contents == ["which incident is firing?", "The incident is INC-7.", "when did it start?"]


async def test_llm_failure_ends_the_turn_with_an_error_message_and_the_chat_stays_usable(chat, agents_llm):
    from fakes.openai_server import error

    agents_llm.add("default", error(500, "upstream exploded"), text("back again"))
    await ask(chat, "first")
    chat_row = await ChatSession.objects.aget(pk=chat.pk)
    assert chat_row.status == SessionStatus.IDLE and "upstream exploded" in chat_row.error
    bubble = await ChatMessage.objects.filter(session=chat, kind="error").afirst()
    assert bubble is not None and "upstream exploded" in bubble.content
    result = await ask(chat, "second")
    assert result.text == "back again"


async def test_sendmessage_is_persisted_as_a_note_and_published_before_the_turn_ends(chat, agents_llm):
    seen = []

    async def listen(event):
        seen.append(event.name)

    agents_llm.add(
        "default",
        tool_calls(call("SendMessage", {"message": "Dispatching specialist-disk, one moment."})),
        text("All done."),
    )
    await ask(chat, "hi", listeners=[listen])
    assert seen.index("note") < seen.index("turn.ended")
    note = await ChatMessage.objects.aget(session=chat, kind="note")
    assert note.content == "Dispatching specialist-disk, one moment."
    history = await services.ahistory(chat.pk)
    assert all(m.get("content") != note.content for m in history if m["role"] == "assistant")


async def test_one_turn_sees_one_configuration_and_the_next_turn_sees_an_edit(chat, org, agents_llm):
    from ops_app.integrations.datasources import save_data_source
    from ops_app.models import DataSource

    def add_source_then_answer(request):
        # An admin adds a Prometheus while the first worker is thinking.
        save_data_source(
            DataSource(organization=org, kind="prometheus", name="prom-new", url="http://prom:9090")
        )
        return text("first done")

    agents_llm.add(
        "default",
        tool_calls(dispatch("specialist-sre", "Check the web SLO.", id="a1")),
        tool_calls(dispatch("specialist-sre", "Check the API SLO.", id="a2")),
        text("both done"),
        tool_calls(dispatch("specialist-sre", "Check the web SLO again.", id="a3")),
        text("third done"),
    )
    agents_llm.add("specialist-sre", add_source_then_answer, text("second done"), text("third"))

    def promql_description(request) -> str:
        tool = next(t for t in request.body["tools"] if t["function"]["name"] == "query_promql")
        return tool["function"]["description"]

    await ask(chat, "how are the SLOs?")
    first, second = agents_llm.seen["specialist-sre"][:2]
    assert "prom-new" not in promql_description(second)  # the turn read its data sources once
    assert promql_description(second) == promql_description(first)
    await ask(chat, "and now?")
    assert "prom-new (default)" in promql_description(agents_llm.seen["specialist-sre"][2])
