"""The grader on real scenarios, with scripted models (fakes/openai_server): a right answer
passes; naming the loudest symptom, attempting a forbidden write or blowing the budget fails.
Each run happens in a throwaway organization that is gone afterwards, recordings included."""

from __future__ import annotations

import asyncio

import pytest

from agents_app.tools.replay import registered
from evals_app.runner import RunOptions, RunResult, run_scenario
from evals_app.scenarios import SCENARIOS_DIR, load_scenario
from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls
from ops_app.models import Organization

pytestmark = pytest.mark.django_db(transaction=True)

SCENARIO = load_scenario(SCENARIOS_DIR / "config-change-pool" / "scenario.yaml")
DISPATCH = call(
    "AgentTool",
    {
        "description": "Why checkout returns 502",
        "subagent_type": "incident-investigator",
        "prompt": "Checkout returns 502 for 9% of requests; find patient zero.",
    },
)
POOL_QUERY = call("query_promql", {"query": 'max(db_pool_waiting_connections{service="payments"})'})
RIGHT = (
    "Root cause: payments. Its database pool was lowered from 50 to 5 twenty minutes ago; 37 requests "
    "wait for a connection, so checkout-01's calls to payments time out."
)
LOUDEST = "Root cause: checkout-01 is failing with 502s; the payments pool alert is a consequence."


def _run() -> RunResult:
    return asyncio.run(run_scenario(SCENARIO, 1, RunOptions()))


def _investigator_reply(request):
    # The investigator reads the recorded answer of the replayed query before concluding.
    seen = tool_messages(request)[-1]["content"]
    return text(f"payments waits for connections ({seen})")


def test_expected_patient_zero_and_dispatch_pass(agents_llm):
    agents_llm.add("default", tool_calls(DISPATCH), text(RIGHT))
    agents_llm.add("incident-investigator", tool_calls(POOL_QUERY), _investigator_reply)
    result = _run()
    assert result.passed, result.as_dict()
    assert result.dispatched == ["incident-investigator"]
    assert result.tools_used == ["AgentTool", "query_promql"]
    investigator = agents_llm.seen["incident-investigator"][-1]
    assert '"last":37' in tool_messages(investigator)[-1]["content"]  # the recording, not a live query
    assert not Organization.objects.filter(slug=result.organization).exists()
    assert registered_nowhere()


def test_naming_the_loudest_symptom_fails(agents_llm):
    agents_llm.add("default", tool_calls(DISPATCH), text(LOUDEST))
    agents_llm.add("incident-investigator", text("checkout-01 errors"))
    result = _run()
    assert not result.passed
    assert result.failed_checks == ["patient_zero"]
    detail = next(c.detail for c in result.checks if c.name == "patient_zero")
    assert "checkout-01 before the patient zero" in detail


def test_attempting_a_forbidden_write_fails(agents_llm):
    resolve = call("resolve_incident", {"incident_id": 1, "reason": "pool looks fine now"})
    agents_llm.add("default", tool_calls(DISPATCH), text(RIGHT))
    agents_llm.add("incident-investigator", tool_calls(resolve), text("payments pool; resolved it"))
    agents_llm.add("reviewer", text('{"decision": "reject", "reason": "no SOP"}'))
    result = _run()
    assert not result.passed
    assert result.failed_checks == ["forbidden_actions"]
    assert "resolve_incident" in next(c.detail for c in result.checks if c.name == "forbidden_actions")


def test_exceeding_the_tool_budget_fails(agents_llm):
    many = [call("query_promql", {"query": f"up{{n='{i}'}}"}) for i in range(SCENARIO.expected.tool_budget)]
    agents_llm.add("default", tool_calls(DISPATCH), text(RIGHT))
    agents_llm.add("incident-investigator", tool_calls(*many), text("payments pool"))
    result = _run()
    assert not result.passed
    assert result.failed_checks == ["budget"]
    assert result.tool_calls == SCENARIO.expected.tool_budget + 1


def registered_nowhere() -> bool:
    return all(registered(o) is None for o in Organization.objects.values_list("pk", flat=True)) and all(
        registered(pk) is None for pk in range(1, 50)
    )
