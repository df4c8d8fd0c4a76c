"""The paged-alert, multi-incident, red-herring, Chinese, replica-lag and open-deleted-file scenarios
replay hermetically: a scripted investigation that reads a recording sees the recorded output (not
the no-data default) and, answering with the scenario's own root cause, passes every check with an
investigator F1 of 1.0."""

from __future__ import annotations

import asyncio

import pytest

from evals_app.runner import RunOptions, run_scenario
from evals_app.scenarios import SCENARIOS_DIR, load_scenario, load_suite
from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

TELEMETRY = ("query_logql", "query_promql")
NEW = (
    "paged-pagerduty-checkout-db", "paged-opsgenie-consumer-lag", "paged-grafana-api-latency",
    "paged-opsgenie-search-readonly",
    "noise-two-incidents", "red-herring-deploy", "zh-payments-deploy", "database-replica-lag",
    "long-context-first-turn",
)  # fmt: skip


def test_the_suite_has_forty_scenarios_over_twelve_categories_with_paged_alerts():
    suite = load_suite()
    assert len(suite) >= 40 and len({s.category for s in suite}) >= 12
    paged = [s.estate["incidents"][0].get("source") for s in suite if s.category == "paging"]
    assert len(paged) >= 4 and set(paged) == {"pagerduty", "opsgenie", "grafana"}
    assert {"zh-disk-binlog", "zh-payments-deploy"} <= {s.name for s in suite if s.category == "language"}


def _longest_text(value) -> str:
    if isinstance(value, str):
        return value
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    return max((_longest_text(item) for item in items), key=len, default="")


@pytest.mark.parametrize("name", NEW)
def test_a_right_investigation_reads_the_recording_and_scores_one(agents_llm, name):
    scenario = load_scenario(SCENARIOS_DIR / name / "scenario.yaml")
    recording = next(r for r in scenario.recordings if r.tool in TELEMETRY and r.match == "contains")
    query = f"sum(rate({recording.arguments['query']}[5m]))"
    entities = scenario.expected.entities
    answer = (
        f"Root cause: {entities.patient_zero} ({scenario.expected.keywords[0]}).\n"
        f"Causal chain: {', '.join(entities.chain) or entities.patient_zero}.\n"
        + (f"Trigger: {', '.join(entities.change)}.\n" if entities.change else "")
    )
    dispatch = call(
        "AgentTool",
        {
            "description": scenario.name,
            "subagent_type": scenario.expected.specialist,
            "prompt": "Find patient zero.",
        },
    )
    seen: list[str] = []

    def investigator_reply(request):
        seen.append(tool_messages(request)[-1]["content"])
        return text("found it")

    agents_llm.add("default", tool_calls(dispatch), text(answer))
    agents_llm.add(
        scenario.expected.specialist, tool_calls(call(recording.tool, {"query": query})), investigator_reply
    )
    result = asyncio.run(run_scenario(scenario, 1, RunOptions()))

    assert "no_data" not in seen[0]
    recorded = _longest_text(recording.output)  # a log line, a label value: the recording's own
    assert recorded in seen[0], (recorded, seen[0])
    assert result.passed, result.as_dict()
    assert result.entities["f1"] == 1.0, result.entities


def test_the_long_context_question_is_the_tenth_turn_of_a_chat_whose_first_turn_names_the_service(agents_llm):
    """The coordinator is sent the nine earlier exchanges, the first one (the only place that says
    which service is "mine") included, ahead of the question; a model that ignores them and picks
    the other open incident fails."""
    scenario = load_scenario(SCENARIOS_DIR / "long-context-first-turn" / "scenario.yaml")
    assert len(scenario.conversation) == 9
    agents_llm.add("default", text("Root cause: search-es-01 garbage-collection pauses slow search-api."))
    result = asyncio.run(run_scenario(scenario, 1, RunOptions()))

    sent = [m for m in agents_llm.seen["default"][0].messages if m["role"] in ("user", "assistant")]
    assert [m["role"] for m in sent] == ["user", "assistant"] * 9 + ["user"]
    assert "on call for the ledger service" in sent[0]["content"]
    assert sent[-1]["content"] == scenario.question
    assert not result.passed and set(result.failed_checks) >= {"patient_zero", "specialist"}
