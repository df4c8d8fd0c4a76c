"""Deferred tool schemas and ToolSearch (docs/kernel.md, "Deferred tools and ToolSearch"): which
schemas an agent is sent, how the model finds and loads the others, that a deferred tool runs only
once loaded, the budget, redirect stubs, the coordinator's real toolbag, and the gate in front of a
deferred write tool."""

from __future__ import annotations

import dataclasses
import json

import pytest
from asgiref.sync import sync_to_async

from agents_app.kernel.events import ListSink
from agents_app.kernel.loop import run_agent
from agents_app.llm.offline.provider import OfflineProvider
from agents_app.models import MutatingProposal
from agents_app.personas.registry import AgentRegistry, aget_registry, file_registry
from agents_app.personas.schema import parse_persona, persona_to_markdown
from agents_app.runtime.core import Runtime
from agents_app.tools.cancel import CancelToken
from agents_app.tools.deferral import plan_tools
from agents_app.tools.toolbag import build_toolbag
from agents_app.toolsets.contract import Tool
from agents_app.toolsets.registry import load_builtin_tools
from agents_app.toolsets.tool_search.shelf import Shelf
from audit_app.models import AuditLog
from chat_app import services
from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls
from tests.support.agents import context, make_tool, persona, provider_for
from tests.support.gate import make_chat, make_incident, make_worker

SEARCH = "ToolSearch"


async def answer(ctx, **arguments):
    return {"tool": ctx.tool_call_id, "arguments": arguments}


def tools(count: int, *, core: tuple[str, ...] = ()) -> list[Tool]:
    """`count` read tools named tool_00…, those in `core` marked core; descriptions name a topic."""
    made = []
    for index in range(count):
        name = f"tool_{index:02d}"
        tool = make_tool(name, answer, description=f"Reads topic{index} figures of the estate.")
        made.append(dataclasses.replace(tool, core=name in core))
    return made


@pytest.fixture
def threshold(settings):
    """Defer past 4 tools, so small test toolbags show the behaviour."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, tool_search=True, deferred_tools_above=4)


async def run(fake, org, who, bag, session=None, **options):
    sink = ListSink()
    result = await run_agent(
        persona=who,
        messages=[{"role": "user", "content": "How is topic7?"}],
        tools=bag,
        ctx=context(org, session),
        provider=options.pop("provider", None) or provider_for(fake),
        sink=sink,
        cancel=CancelToken(),
        **options,
    )
    return result, sink


def result_of(request, index: int = -1) -> dict:
    return json.loads(tool_messages(request)[index]["content"])


# -- which schemas are sent ---------------------------------------------------------------------


def test_past_the_threshold_only_core_tools_and_tool_search_are_offered(threshold):
    plan = plan_tools(persona(), tools(8, core=("tool_01",)))
    assert [tool.name for tool in plan.offered] == ["tool_01", SEARCH]
    assert set(plan.shelf.tools) == {f"tool_{i:02d}" for i in range(8)} - {"tool_01"}
    listing = plan.offered[-1].description
    assert (
        "tool_00" in listing and "tool_07" in listing and "tool_01" not in listing.split("Deferred tools:")[1]
    )


def test_at_or_under_the_threshold_or_switched_off_every_schema_is_sent(threshold, settings):
    assert [t.name for t in plan_tools(persona(), tools(4)).offered] == [f"tool_{i:02d}" for i in range(4)]
    settings.CONFIG = dataclasses.replace(settings.CONFIG, tool_search=False)
    plan = plan_tools(persona(), tools(8))
    assert plan.shelf is None and len(plan.offered) == 8


def test_the_offline_model_is_sent_every_tool(threshold):
    plan = plan_tools(persona(), tools(8), sees_every_tool=OfflineProvider.sees_every_tool)
    assert plan.shelf is None and len(plan.offered) == 8


def test_a_personas_core_tools_replace_the_toolsets_choice(threshold):
    who = persona(core_tools=("tool_0[56]",))
    plan = plan_tools(who, tools(8, core=("tool_01",)))
    assert [tool.name for tool in plan.offered] == ["tool_05", "tool_06", SEARCH]


def test_redirect_stubs_are_not_offered_or_counted_but_stay_callable(threshold):
    stubs = [dataclasses.replace(t, name=f"stub_{t.name}", redirect=True) for t in tools(6)]
    small = plan_tools(persona(), tools(3) + stubs)  # 3 real tools: nothing deferred, stubs unadvertised
    assert small.shelf is None and [t.name for t in small.offered] == ["tool_00", "tool_01", "tool_02"]
    assert "stub_tool_00" in small.callable
    plan = plan_tools(persona(), tools(6, core=("tool_00",)) + stubs)
    assert "stub_tool_00" not in {t.name for t in plan.offered}
    assert "stub_tool_00" in plan.callable and "stub_tool_00" not in plan.shelf.tools


def test_mcp_tools_are_deferred_and_listed_per_server_past_a_handful():
    many = [make_tool(f"mcp__github__op_{i}", answer) for i in range(9)]
    few = [make_tool(f"mcp__pager__op_{i}", answer) for i in range(2)]
    listing = Shelf([*tools(2), *many, *few]).listing()
    assert listing == "tool_00, tool_01, mcp__github__* (9 tools), mcp__pager__op_0, mcp__pager__op_1"


def test_keyword_search_ranks_name_matches_first_and_select_reports_unknown_names():
    bag = tools(3) + [make_tool("disk_usage", answer, description="Disk space used per mount.")]
    shelf = Shelf(bag, sent=frozenset({"query_promql"}))
    found, _ = shelf.search("disk space topic1")
    assert [tool.name for tool in found] == ["disk_usage", "tool_01"]
    found, unknown = shelf.search("select:tool_02, query_promql, nope")
    assert [tool.name for tool in found] == ["tool_02"] and unknown == ["nope"]


def test_every_built_in_tool_is_found_in_the_top_three_by_the_words_of_its_name():
    """Tool selection: a model asking for "change events" or "host du summary" gets that tool."""
    shelf = Shelf(list(load_builtin_tools().values()))
    missed = {
        name: [tool.name for tool in shelf.search(name.replace("_", " "), 3)[0]]
        for name in shelf.tools
        if name not in [tool.name for tool in shelf.search(name.replace("_", " "), 3)[0]]
    }
    assert missed == {}


@pytest.mark.parametrize(
    ("query", "wanted"),
    [
        ("latency p99", "query_promql"),
        ("metrics", "query_promql"),
        ("runbook", "query_knowledge"),
        ("host owner", "query_devices"),
        ("open incidents", "get_active_incidents"),
        ("incident", "query_incidents"),
        ("logs", "query_logql"),
        ("traces", "query_traceql"),
        ("changes", "query_change_events"),
        ("similar incidents", "find_similar_incidents"),
    ],
)
def test_the_words_of_a_coordinators_question_find_its_read_among_the_first_three(query, wanted):
    """The coordinator is sent no reads (core_tools: []): what it searches for must bring them."""
    coordinator = file_registry().by_name("default")
    reads = build_toolbag(coordinator, load_builtin_tools(), coordinator=True)
    found, _ = Shelf([tool for tool in reads if not tool.redirect]).search(query, 3)
    assert wanted in [tool.name for tool in found]


def test_core_tools_in_a_persona_file_load_round_trip_and_unknown_names_are_reported():
    text = (
        "---\nname: lean\ndescription: d\nwhen_to_use: w\n"
        "core_tools: [query_promql, no_such_tool]\n---\nBody\n"
    )
    who = parse_persona(text)
    assert who.core_tools == ("query_promql", "no_such_tool") and who.extra == {}
    assert parse_persona(persona_to_markdown(who)).core_tools == who.core_tools
    assert any("unknown tool(s): no_such_tool" in note for note in AgentRegistry()._lint(who))


# -- a run -------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_the_model_finds_a_tool_loads_it_and_calls_it(fake_llm, org, threshold):
    fake_llm.script(
        tool_calls(call(SEARCH, {"query": "topic7 figures"}, id="s1")),
        tool_calls(call("tool_07", {"window": "1h"}, id="t1")),
        text("topic7 is fine"),
    )
    result, _ = await run(fake_llm, org, persona(), tools(10, core=("tool_00",)))

    first, second, third = fake_llm.chat_requests
    assert first.tool_names == ["tool_00", SEARCH]
    found = result_of(second)["tools"]
    assert found[0]["name"] == "tool_07" and found[0]["parameters"] == {"type": "object", "properties": {}}
    assert second.tool_names == ["tool_00", SEARCH, *[tool["name"] for tool in found]]
    assert result_of(third) == {"tool": "t1", "arguments": {"window": "1h"}}
    assert result.status == "completed" and result.text == "topic7 is fine"
    rows = [row async for row in AuditLog.objects.order_by("pk").values_list("tool", "status")]
    assert rows == [(SEARCH, "ok"), ("tool_07", "ok")]


@pytest.mark.django_db(transaction=True)
async def test_a_deferred_tool_called_before_it_is_loaded_does_not_run(fake_llm, org, threshold):
    ran = []

    async def counted(ctx, **arguments):
        ran.append(ctx.tool_call_id)
        return "ran"

    bag = tools(9) + [make_tool("restart_queue", counted, description="Restarts the queue.")]
    fake_llm.script(
        tool_calls(call("restart_queue", {}, id="early")),
        tool_calls(call("restart_queue", {}, id="late")),
        text("done"),
    )
    await run(fake_llm, org, persona(), bag)

    first, second, third = fake_llm.chat_requests
    assert "restart_queue" not in first.tool_names and "restart_queue" in second.tool_names
    assert "Not run: restart_queue is a deferred tool" in tool_messages(second)[-1]["content"]
    assert ran == ["late"] and tool_messages(third)[-1]["content"] == "ran"
    assert (await AuditLog.objects.aget(tool_call_id="early")).status == "error"


@pytest.mark.django_db(transaction=True)
async def test_an_unknown_name_or_no_match_tells_the_model_what_is_deferred(fake_llm, org, threshold):
    fake_llm.script(
        tool_calls(call(SEARCH, {"query": "select:tool_03,made_up"}, id="s1")),
        tool_calls(call(SEARCH, {"query": "kubernetes"}, id="s2")),
        text("nothing on kubernetes"),
    )
    await run(fake_llm, org, persona(), tools(6))

    selected = result_of(fake_llm.chat_requests[1])
    assert [tool["name"] for tool in selected["tools"]] == ["tool_03"] and selected["unknown"] == ["made_up"]
    missed = result_of(fake_llm.chat_requests[2])
    assert missed["tools"] == [] and "No deferred tool matches 'kubernetes'" in missed["note"]
    assert "tool_05" in missed["note"]


@pytest.mark.django_db(transaction=True)
async def test_tool_search_is_not_counted_in_the_tool_budget(fake_llm, org, threshold):
    fake_llm.script(
        tool_calls(call(SEARCH, {"query": "select:tool_05"}, id="s1"), call(SEARCH, {"query": "topic6"})),
        tool_calls(call("tool_05", {}, id="t1")),
        text("topic5 read"),
    )
    result, _ = await run(fake_llm, org, persona(max_tool_calls=1), tools(8))
    # Two searches, then the one budgeted call runs; only then is the budget spent (wrap-up).
    assert result.usage["tool_calls"] == 1 and result_of(fake_llm.chat_requests[2])["tool"] == "t1"
    assert result.status == "budget_exhausted" and "topic5 read" in result.text


# -- the product's own agents ------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_the_coordinator_sends_its_control_tools_and_still_redirects_a_hidden_stub(
    org, member, agents_llm, settings
):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, tool_search=True, deferred_tools_above=15)
    agents_llm.add(
        "default",
        tool_calls(call("host_bash", {"device": "web-01", "command": "df -h"}, id="b1")),
        tool_calls(call(SEARCH, {"query": "select:query_change_events"}, id="s1")),
        tool_calls(call("query_change_events", {}, id="c1")),
        text("no recent changes"),
    )
    chat = await sync_to_async(services.start_chat)(member)
    await services.abegin_turn(chat.pk, "What changed on web-01?")

    result = await Runtime().run_turn(chat.pk)

    requests = agents_llm.seen["default"]
    first = requests[0].tool_names
    assert set(first) - {"Skill"} == {"AgentTool", "SendMessage", "TaskStop", SEARCH}  # core_tools: []
    assert "query_change_events" not in first and "host_bash" not in first  # deferred; a stub
    assert json.loads(tool_messages(requests[1])[-1]["content"])["status"] == "redirect"
    assert "query_change_events" in requests[2].tool_names
    assert result.status == "completed"
    assert (await AuditLog.objects.aget(tool_call_id="c1")).status == "ok"


@pytest.mark.django_db(transaction=True)
async def test_the_coordinator_may_call_an_everyday_read_it_was_not_sent_and_then_gets_its_schema(
    org, member, agents_llm, settings
):
    """query_promql is core in its manifest but not in the coordinator's core_tools: its schema waits
    behind ToolSearch, yet a direct call runs (arguments checked) and loads it; a deferred read
    that is not an everyday one still has to be found first."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, tool_search=True, deferred_tools_above=15)
    agents_llm.add(
        "default",
        tool_calls(call("query_promql", {"query": 'up{job="checkout"}'}, id="p1")),
        tool_calls(call("query_promql", {"expression": "up"}, id="p2"), call("query_logql", {}, id="l1")),
        text("checkout is up"),
    )
    chat = await sync_to_async(services.start_chat)(member)
    await services.abegin_turn(chat.pk, "Is checkout up?")

    result = await Runtime().run_turn(chat.pk)

    first, second, third = agents_llm.seen["default"]
    listing = next(
        t["function"]["description"] for t in first.body["tools"] if t["function"]["name"] == SEARCH
    )
    assert "query_promql" not in first.tool_names and "query_promql" in listing
    assert json.loads(tool_messages(second)[-1]["content"]).get("status") != "error"
    assert "query_promql" in second.tool_names  # loaded by the call
    promql, wrong, logql = tool_messages(third)[-3:]
    assert "'query' is a required property" in wrong["content"]  # checked as for any tool
    assert logql["content"].startswith("Not run: query_logql is a deferred tool")
    assert result.status == "completed"
    assert (await AuditLog.objects.aget(tool_call_id="p1")).status == "ok"


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("fresh_gate_caches")
async def test_a_deferred_write_tool_still_passes_the_review_gate(
    org, member, agents_llm, fake_llm, settings
):
    """A write loaded through ToolSearch is held by the gate like any other: rejected, it never runs."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, tool_search=True, deferred_tools_above=1)
    incident = await sync_to_async(make_incident)(org)
    chat = await sync_to_async(make_chat)(member)
    worker = await sync_to_async(make_worker)(chat)
    agents_llm.add("reviewer", text("Decision: reject\nSOP: no runbook allows acknowledging it now"))
    reason = "On-call confirmed; runbook RB-12 says acknowledge first."
    agents_llm.add(
        "specialist-ops",
        tool_calls(call(SEARCH, {"query": "select:acknowledge_incident"}, id="s1")),
        tool_calls(call("acknowledge_incident", {"incident_id": incident.pk, "reason": reason}, id="w1")),
        text("the reviewer refused"),
    )
    who = (await aget_registry(org.pk)).by_name("specialist-ops")
    bag = [t for t in load_builtin_tools().values() if t.name in (who.tools or ())]
    result, _ = await run(fake_llm, org, who, bag, worker)

    assert "acknowledge_incident" not in agents_llm.seen["specialist-ops"][0].tool_names
    assert result.status == "completed"
    proposal = await MutatingProposal.objects.aget(tool_call_id="w1")
    assert (proposal.tool, proposal.reviewer_decision) == ("acknowledge_incident", "reject")
    assert (await AuditLog.objects.aget(tool_call_id="w1")).status == "rejected"
    await incident.arefresh_from_db()
    assert incident.status == "firing" and incident.acknowledged_at is None  # never acknowledged
