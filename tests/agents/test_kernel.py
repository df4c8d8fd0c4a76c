"""The ReAct loop against the fake OpenAI-compatible server, through the real SDK."""

from __future__ import annotations

import asyncio
import json

import pytest

from agents_app.kernel.events import Error, Final, ListSink, TextDelta, ToolEnd, ToolStart
from agents_app.kernel.loop import run_agent
from agents_app.tools.cancel import CancelToken
from agents_app.toolsets.contract import ToolResult
from audit_app.models import AuditLog, LLMCall
from audit_app.recorder import record_llm_call
from chat_app.models import ChatSession
from fakes.openai_server import call, error, text, tool_calls
from tests.support.agents import context, make_tool, persona, provider_for

pytestmark = pytest.mark.django_db(transaction=True)

ASK = [{"role": "user", "content": "Why is checkout slow?"}]


@pytest.fixture
def session(org, member):
    return ChatSession.objects.create(organization=org, user=member, agent_id="specialist-disk")


async def run(fake, org, session=None, *, who=None, tools=(), cancel=None, sink=None, **options):
    sink = sink if sink is not None else ListSink()
    result = await run_agent(
        persona=who or persona(),
        messages=list(options.pop("messages", ASK)),
        tools=list(tools),
        ctx=context(org, session),
        provider=options.pop("provider", None) or provider_for(fake),
        sink=sink,
        cancel=cancel or CancelToken(),
        recorder=options.pop("recorder", record_llm_call),
        **options,
    )
    return result, sink


async def echo(ctx, **arguments):
    return {"echo": arguments}


async def test_streams_text_and_finishes(fake_llm, org, session):
    fake_llm.script(text("Checkout is slow because the DB pool is exhausted.", chunk_size=6))
    result, sink = await run(fake_llm, org, session)
    assert result.status == "completed"
    assert "".join(e.text for e in sink.of(TextDelta)) == result.text
    assert len(sink.of(TextDelta)) > 1
    assert sink.events[-1] == Final(result.text)
    assert result.new_messages == [{"role": "assistant", "content": result.text}]
    row = await LLMCall.objects.aget(session=session)
    assert (row.model, row.prompt_tokens, row.completion_tokens, row.error) == ("fake-model", 11, 7, "")


async def test_system_prompt_and_reminder_are_sent_on_every_turn(fake_llm, org, session):
    fake_llm.script(tool_calls(call("echo", {"n": 1})), text("done"))
    who = persona(body="You inspect disks.", critical_reminder="Never guess sizes.")
    await run(fake_llm, org, session, who=who, tools=[make_tool("echo", echo)], base_prompt="BASE")
    requests = fake_llm.chat_requests
    assert len(requests) == 2
    for request in requests:
        assert request.messages[0]["role"] == "system"
        assert request.messages[0]["content"].startswith("BASE\n\nYou inspect disks.")
        last = request.messages[-1]
        assert last["role"] == "system" and last["content"].startswith("<system-reminder>")
        assert "Never guess sizes." in last["content"]
        assert sum("<system-reminder>" in (m.get("content") or "") for m in request.messages) == 1


async def test_parallel_tool_calls_run_concurrently_and_results_keep_call_order(fake_llm, org, session):
    started = {"a": asyncio.Event(), "b": asyncio.Event()}

    async def meet(ctx, me: str, other: str):
        started[me].set()
        # Only completes if the other call is running at the same time.
        await asyncio.wait_for(started[other].wait(), timeout=5)
        return f"{me} met {other}"

    params = {"type": "object", "properties": {"me": {"type": "string"}, "other": {"type": "string"}}}
    fake_llm.script(
        tool_calls(
            call("meet", {"me": "a", "other": "b"}, id="ca"), call("meet", {"me": "b", "other": "a"}, id="cb")
        ),
        text("both met"),
    )
    result, sink = await run(fake_llm, org, session, tools=[make_tool("meet", meet, params=params)])
    assert result.status == "completed"
    tool_messages = [m for m in fake_llm.chat_requests[1].messages if m["role"] == "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tool_messages] == [
        ("ca", "a met b"),
        ("cb", "b met a"),
    ]
    assert [e.call_id for e in sink.of(ToolStart)] == ["ca", "cb"]
    assert sorted(e.status for e in sink.of(ToolEnd)) == ["ok", "ok"]
    assert [m["role"] for m in result.new_messages] == ["assistant", "tool", "tool", "assistant"]


async def test_malformed_json_and_unknown_tool_become_readable_errors(fake_llm, org, session):
    fake_llm.script(
        tool_calls(call("echo", '{"path": "/var', id="c1"), call("host_bash", {"cmd": "df -h"}, id="c2")),
        text("Sorry, retrying properly."),
    )
    result, _ = await run(fake_llm, org, session, tools=[make_tool("echo", echo)])
    assert result.status == "completed"
    second = fake_llm.chat_requests[1].messages
    tool_text = {m["tool_call_id"]: m["content"] for m in second if m["role"] == "tool"}
    assert "not valid JSON" in tool_text["c1"]
    assert "no tool named 'host_bash'" in tool_text["c2"] and "echo" in tool_text["c2"]
    assistant = next(m for m in second if m["role"] == "assistant")
    assert assistant["tool_calls"][0]["function"]["arguments"] == "{}"  # history stays valid JSON
    rows = {r.tool_call_id: r async for r in AuditLog.objects.filter(session=session)}
    assert rows["c1"].arguments == '{"path": "/var' and rows["c1"].status == "error"
    assert rows["c2"].tool == "host_bash" and rows["c2"].tool_class == "" and rows["c2"].status == "error"


async def test_a_crashing_tool_is_reported_and_the_loop_goes_on(fake_llm, org, session):
    async def broken(ctx):
        raise KeyError("missing_field")

    fake_llm.script(tool_calls(call("broken", {})), text("The tool failed; here is what I know."))
    result, sink = await run(fake_llm, org, session, tools=[make_tool("broken", broken)])
    assert result.status == "completed"
    end = sink.of(ToolEnd)[0]
    assert end.status == "error" and "internal error" in end.content and "missing_field" in end.content


async def test_a_hanging_tool_times_out_and_the_loop_goes_on(fake_llm, org, session):
    never = asyncio.Event()

    async def hang(ctx):
        await never.wait()

    fake_llm.script(tool_calls(call("hang", {})), text("It timed out."))
    result, _ = await run(fake_llm, org, session, tools=[make_tool("hang", hang, timeout=0.2)])
    assert result.status == "completed" and result.text == "It timed out."
    row = await AuditLog.objects.aget(session=session)
    assert row.status == "timeout" and "timed out after 0.2s" in row.error
    assert "timed out" in [m for m in fake_llm.chat_requests[1].messages if m["role"] == "tool"][0]["content"]


async def test_max_turns_ends_with_a_marked_partial_answer(fake_llm, org, session):
    fake_llm.script(
        tool_calls(call("echo", {"step": 1})),
        tool_calls(call("echo", {"step": 2})),
        text("So far: two checks, both fine."),
    )
    result, sink = await run(
        fake_llm, org, session, who=persona(max_turns=2), tools=[make_tool("echo", echo)]
    )
    assert result.status == "budget_exhausted"
    assert result.text.startswith("[Partial answer: the limit of 2 turns is reached.]")
    assert "So far: two checks, both fine." in result.text
    wrap_up = fake_llm.chat_requests[2]
    assert "tools" not in wrap_up.body and "Do not call tools" in wrap_up.messages[-1]["content"]
    assert len(fake_llm.chat_requests) == 3 and isinstance(sink.events[-1], Final)


async def test_tool_budget_stops_extra_calls_and_the_loop(fake_llm, org, session):
    ran = []

    async def count(ctx, n: int):
        ran.append(n)
        return n

    params = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    fake_llm.script(
        tool_calls(call("count", {"n": 1}), call("count", {"n": 2})),
        tool_calls(call("count", {"n": 3}), call("count", {"n": 4}, id="over")),
        text("Three counts done."),
    )
    who = persona(max_tool_calls=3, max_turns=10)
    result, _ = await run(fake_llm, org, session, who=who, tools=[make_tool("count", count, params=params)])
    assert sorted(ran) == [1, 2, 3]
    assert result.status == "budget_exhausted" and "tool budget of 3 calls is spent" in result.text
    over = await AuditLog.objects.aget(tool_call_id="over")
    assert over.status == "rejected" and "budget" in over.error
    assert result.usage["tool_calls"] == 3 and len(fake_llm.chat_requests) == 3


async def test_retries_then_success(fake_llm, org, session):
    fake_llm.script(error(429), error(502), text("Fine after retries."))
    result, _ = await run(fake_llm, org, session, provider=provider_for(fake_llm, max_retries=2))
    assert result.status == "completed" and result.text == "Fine after retries."


async def test_retries_exhausted_fail_the_run_with_the_reason(fake_llm, org, session):
    fake_llm.script(error(500), error(500), error(500))
    result, sink = await run(fake_llm, org, session, provider=provider_for(fake_llm, max_retries=2))
    assert result.status == "failed"
    assert "HTTP 500" in result.error and "3 attempts" in result.error
    assert sink.events[-1] == Error(result.error)
    row = await LLMCall.objects.aget(session=session)
    assert "HTTP 500" in row.error


async def test_cancel_inside_a_tool_stops_before_the_next_llm_call(fake_llm, org, session):
    token = CancelToken()

    async def stop_button(ctx):
        token.cancel("user pressed Stop")
        return "stopping"

    fake_llm.script(tool_calls(call("stop_button", {})), text("must never be requested"))
    result, sink = await run(
        fake_llm, org, session, tools=[make_tool("stop_button", stop_button)], cancel=token
    )
    assert result.status == "killed" and "user pressed Stop" in result.error
    assert len(fake_llm.chat_requests) == 1 and fake_llm.pending() == 1
    assert [m["role"] for m in result.new_messages] == ["assistant", "tool"]
    assert isinstance(sink.events[-1], Error)


def stopped_at_second_poll(polls: list) -> CancelToken:
    """A token whose cross-process flag (another process's TaskStop) is up from its second read."""

    async def stop_flag():
        polls.append(1)
        return "TaskStop from the coordinator" if len(polls) > 1 else None

    return CancelToken(check=stop_flag)


def counting(ran: list):
    async def work(ctx):
        ran.append(1)
        return "worked"

    return work


async def test_cross_process_stop_flag_is_checked_before_a_write_runs(fake_llm, org, session):
    polls, ran = [], []
    fake_llm.script(tool_calls(call("restart", {}, id="w1"), call("restart", {}, id="w2")))
    tools = [make_tool("restart", counting(ran), tool_class="write")]
    result, _ = await run(fake_llm, org, session, tools=tools, cancel=stopped_at_second_poll(polls))
    assert result.status == "killed" and "TaskStop" in result.error
    assert ran == []
    statuses = [r.status async for r in AuditLog.objects.filter(session=session)]
    assert statuses == ["killed", "killed"]


async def test_a_read_trusts_the_in_process_token_and_the_flag_stops_the_next_model_call(
    fake_llm, org, session
):
    """Reads do not query the stop flag (the runtime's watcher fires the token within a second);
    the flag is still read before the next model call, so the run ends there."""
    polls, ran = [], []
    fake_llm.script(tool_calls(call("look", {}, id="r1"), call("look", {}, id="r2")), text("never sent"))
    tools = [make_tool("look", counting(ran))]
    result, _ = await run(fake_llm, org, session, tools=tools, cancel=stopped_at_second_poll(polls))
    assert ran == [1, 1] and len(polls) == 2
    assert result.status == "killed" and "TaskStop" in result.error
    assert len(fake_llm.chat_requests) == 1


async def test_tool_result_status_and_arbitrary_tools(fake_llm, org, session):
    async def stub(ctx, **arguments):
        return ToolResult({"status": "redirect", "hint": "use AgentTool"}, status="redirect")

    fake_llm.script(tool_calls(call("host_du_summary", {"device": "web-01"})), text("ok"))
    result, sink = await run(fake_llm, org, session, tools=[make_tool("host_du_summary", stub)])
    assert sink.of(ToolEnd)[0].status == "redirect"
    row = await AuditLog.objects.aget(session=session)
    assert row.status == "redirect" and json.loads(row.result)["hint"] == "use AgentTool"


async def test_persona_model_is_requested(fake_llm, org, session):
    fake_llm.script(text("hi"))
    await run(fake_llm, org, session, who=persona(model="bigger-model"))
    assert fake_llm.chat_requests[0].body["model"] == "bigger-model"


async def test_a_stop_during_streaming_ends_the_run_without_another_call(fake_llm, org, session):
    token = CancelToken()

    class StopOnFirstDelta(ListSink):
        async def emit(self, event):
            await super().emit(event)
            if isinstance(event, TextDelta):
                token.cancel("Stop pressed while streaming")

    fake_llm.script(text("a long answer " * 20, chunk_size=8), text("never requested"))
    result, sink = await run(fake_llm, org, session, cancel=token, sink=StopOnFirstDelta())
    assert result.status == "killed" and "while streaming" in result.error
    assert len(sink.of(TextDelta)) < 5
    assert len(fake_llm.chat_requests) == 1


async def test_concurrent_agents_get_their_own_script_by_system_prompt(fake_llm, org):
    from fakes.openai_server import Reply

    def by_persona(request) -> Reply:
        who = "disk" if "You are specialist-disk." in request.system_prompt else "network"
        if any(m["role"] == "tool" for m in request.messages):
            return text(f"{who} done")
        return tool_calls(call("probe", {"who": who}))

    fake_llm.route(by_persona)
    seen = []

    async def probe(ctx, who: str):
        seen.append((ctx.persona_name, who))
        return f"probed {who}"

    params = {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}
    tools = [make_tool("probe", probe, params=params)]
    disk, network = await asyncio.gather(
        run(fake_llm, org, who=persona("specialist-disk"), tools=tools),
        run(fake_llm, org, who=persona("specialist-network"), tools=tools),
    )
    assert (disk[0].text, network[0].text) == ("disk done", "network done")
    assert sorted(seen) == [("specialist-disk", "disk"), ("specialist-network", "network")]


async def test_the_kernel_records_model_calls_only_through_its_recorder(fake_llm, org, session):
    """No recorder, no LLMCall row: the kernel itself never writes audit tables."""
    fake_llm.script(text("fine"))
    seen = []

    async def recorder(**fields):
        seen.append(fields)

    result, _ = await run(fake_llm, org, session, recorder=recorder)
    assert result.status == "completed"
    assert [f["model"] for f in seen] and seen[0]["session_id"] == session.pk
    assert await LLMCall.objects.filter(session=session).acount() == 0
