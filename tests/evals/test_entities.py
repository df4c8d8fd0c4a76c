"""The investigator's F1 on hand-built reports, with exact numbers: a perfect report, a partial one,
a wrong patient zero, a hallucinated component; where the claims are read from (a JSON report, the
claim sections, the prose that states a cause); the scenario's expected entities refused when the
estate does not know them; and a scripted model's run scored end to end."""

from __future__ import annotations

import asyncio
import json
import textwrap

import pytest

from evals_app.entities import agrees_with_judge, score_entities
from evals_app.estate import entity_names
from evals_app.reports import pass_rates
from evals_app.runner import RunOptions, run_scenario, run_suite
from evals_app.scenarios import SCENARIOS_DIR, ScenarioError, load_scenario
from fakes.openai_server import call, text, tool_calls

ESTATE = {
    "devices": [
        {"name": "web-01"},
        {"name": "sessions-01"},
        {"name": "redis-01", "aliases": ["the cache box"]},
        {"name": "db-01"},
    ],
    "topology": {
        "nodes": [
            {"name": "web", "device": "web-01"},
            {"name": "sessions", "device": "sessions-01"},
            {"name": "redis", "device": "redis-01"},
            {"name": "cdn"},
        ]
    },
    "changes": [{"resource_name": "redis", "name": "redis maxmemory 4gb → 1gb", "aliases": ["maxmemory"]}],
}
NAMES = entity_names(ESTATE)
EXPECTED = ("redis-01", "sessions-01", "web-01", "redis maxmemory 4gb → 1gb")


def _score(answer: str):
    return score_entities(EXPECTED, [answer], NAMES)


def test_the_estate_names_a_node_bound_to_a_device_as_that_device():
    assert NAMES["redis-01"] == ("redis-01", "the cache box", "redis")
    assert NAMES["cdn"] == ("cdn",)
    assert NAMES["redis maxmemory 4gb → 1gb"] == ("redis maxmemory 4gb → 1gb", "maxmemory")
    assert "db-01" in NAMES and "redis" not in NAMES


def test_a_perfect_report_scores_one():
    score = _score(
        "## Root cause\nredis was lowered to maxmemory 1gb and evicts keys.\n"
        "## Causal chain\n- sessions-01 rebuilds sessions from the database\n- web-01 times out\n"
    )
    assert score.as_dict() == {
        "expected": list(EXPECTED),
        "claimed": ["redis-01", "redis maxmemory 4gb → 1gb", "sessions-01", "web-01"],
        "precision": 1.0,
        "recall": 1.0,
        "f1": 1.0,
        "source": "sections",
    }


def test_a_partial_report_loses_recall_only():
    score = _score("Root cause: redis-01 evicts session keys, so sessions-01 logs people out.")
    assert (score.precision, score.recall, score.f1) == (1.0, 0.5, 0.667)


def test_a_wrong_patient_zero_loses_both():
    # Claims db-01 (wrong) and web-01 (on the chain): 1 of 2 claims right, 1 of 4 expected found.
    score = _score("**Root cause:** db-01 is slow, and web-01 times out waiting for it.")
    assert score.claimed == ("db-01", "web-01")
    assert (score.precision, score.recall, score.f1) == (0.5, 0.25, 0.333)
    assert agrees_with_judge(score, "redis-01", {"verdict": "fail"}) is True
    assert agrees_with_judge(score, "redis-01", {"verdict": "pass"}) is False
    assert agrees_with_judge(score, "redis-01", {"verdict": "error"}) is None


def test_a_hallucinated_component_costs_precision():
    # The cdn is in the estate but not in the chain: 4 right of 5 claims.
    score = _score(
        "Root cause: redis-01 hit maxmemory; sessions-01 lost its sessions, web-01 and the cdn time out."
    )
    assert (score.precision, score.recall, score.f1) == (0.8, 1.0, 0.889)
    assert agrees_with_judge(score, "redis-01", {"verdict": "pass"}) is True


def test_ruled_out_and_next_steps_are_not_claims():
    score = _score(
        "Root cause: redis-01 evicts keys (maxmemory).\n"
        "Ruled out: db-01 and the cdn are healthy.\n"
        "Next steps: restart web-01 once redis is fixed.\n"
    )
    assert score.claimed == ("redis-01", "redis maxmemory 4gb → 1gb")
    assert (score.precision, score.recall) == (1.0, 0.5)


def test_a_json_report_is_read_by_its_fields():
    report = {
        "summary": "db-01 and web-01 are mentioned here but the summary is not a claim field",
        "root_cause": "maxmemory was lowered",
        "patient_zero": {"kind": "device", "name": "redis-01"},
        "causal_chain": ["redis evicts", "sessions-01 reloads"],
        "evidence": [{"tool_call_id": "c1", "finding": "web-01 p99 4s"}],
        "ruled_out": [{"hypothesis": "db-01", "why": "idle"}],
    }
    score = _score(f"Here is the report:\n```json\n{json.dumps(report)}\n```")
    assert score.source == "report"
    assert set(score.claimed) == set(EXPECTED) and score.f1 == 1.0


def test_prose_claims_only_in_sentences_that_state_a_cause():
    score = _score(
        "I looked at web-01, sessions-01, db-01 and the cdn. Everything is fine on db-01. "
        "Logouts happen because redis-01 evicts keys."
    )
    assert (score.source, score.claimed) == ("sentences", ("redis-01",))
    dump = _score("- incidents: web-01 slow\n- devices: web-01, sessions-01, redis-01, db-01")
    assert (dump.claimed, dump.f1) == ((), 0.0)


def test_whole_words_only_and_case_ignored():
    score = _score("Root cause: REDIS-01. Not redis-012, not web-01x.")
    assert score.claimed == ("redis-01",)


SCENARIO = """\
    name: {name}
    category: cascade
    question: Why is web slow?
    estate:
      devices: [{name: web-01}, {name: redis-01}]
      topology: {nodes: [{name: redis, device: redis-01}]}
    expected:
      entities: {patient_zero: REDIS, chain: [web-01]}
"""


def test_a_scenario_resolves_its_entities_and_refuses_unknown_ones(tmp_path):
    path = tmp_path / "s" / "scenario.yaml"
    path.parent.mkdir()
    path.write_text(textwrap.dedent(SCENARIO).replace("{name}", "s"))
    assert load_scenario(path).expected.entities.all == ("redis-01", "web-01")
    path.write_text(textwrap.dedent(SCENARIO).replace("{name}", "s").replace("[web-01]", "[web-02]"))
    with pytest.raises(ScenarioError, match=r"expected.entities.chain: web-02 not in the estate"):
        load_scenario(path)
    path.write_text(textwrap.dedent(SCENARIO).replace("{name}", "s").replace("chain:", "chian:"))
    with pytest.raises(ScenarioError, match=r"expected.entities: unknown key\(s\) chian"):
        load_scenario(path)


POOL = load_scenario(SCENARIOS_DIR / "config-change-pool" / "scenario.yaml")
DISPATCH = call(
    "AgentTool",
    {"description": "502s", "subagent_type": "incident-investigator", "prompt": "Find patient zero."},
)


RIGHT_PARTIAL_SILENT = [
    # payments (the node of payments-01), the pool change and checkout-01: every expected entity.
    ("Root cause: payments. Its database pool was cut from 50 to 5, so checkout-01 times out.", 1.0, True),
    # The loudest symptom first: fails the patient-zero check; 2 of 3 entities, no wrong one.
    ("Root cause: checkout-01 returns 502; payments is slow as a consequence.", 0.8, False),
    # No cause stated at all: nothing claimed.
    ("I checked checkout-01, payments-01 and pg-01.", 0.0, False),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("answer", "f1", "passed"), RIGHT_PARTIAL_SILENT)
def test_a_scripted_run_is_scored_from_its_answer(agents_llm, answer, f1, passed):
    agents_llm.add("default", tool_calls(DISPATCH), text(answer))
    agents_llm.add("incident-investigator", text("payments waits for connections"))
    result = asyncio.run(run_scenario(POOL, 1, RunOptions()))
    assert (result.entities["f1"], result.passed) == (f1, passed), result.as_dict()
    assert result.entities["expected"] == ["payments-01", "checkout-01", "payments db_pool_size 50 → 5"]


@pytest.mark.django_db(transaction=True)
def test_a_model_right_once_partial_once_silent_once_scores_a_third_and_macro_f1_of_point_six(agents_llm):
    for answer, _, _ in RIGHT_PARTIAL_SILENT:  # run one after the other: one scripted answer each
        agents_llm.add("default", tool_calls(DISPATCH), text(answer))
        agents_llm.add("incident-investigator", text("payments waits for connections"))
    results = asyncio.run(run_suite([POOL], RunOptions(repeat=3, parallel=1)))
    assert [(r.entities["f1"], r.passed) for r in results] == [(f1, ok) for _, f1, ok in RIGHT_PARTIAL_SILENT]
    assert pass_rates(results)["overall"] == {"runs": 3, "passed": 1, "rate": 0.333, "macro_f1": 0.6}
