"""A Kubernetes scenario run end to end with scripted models (fakes/openai_server): the specialist
reads the recorded previous logs, proposes the rollback, the reviewer approves it, the replayed
write answers, and the run passes `proposed_write`. The specialist is an organization agent of the
sandbox (the scenario's `specialist` pointed at it), so the test depends on no persona file."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from agents_app.models import UserAgent
from agents_app.toolsets.contract import UNCONFIGURED
from evals_app import runner
from evals_app.runner import RunOptions, RunResult, run_scenario
from evals_app.scenarios import SCENARIOS_DIR, load_scenario
from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls
from ops_app.models import Organization

pytestmark = pytest.mark.django_db(transaction=True)

AGENT = "k8s-eval"
BASE = load_scenario(SCENARIOS_DIR / "k8s-crashloop-configmap" / "scenario.yaml")
SCENARIO = dataclasses.replace(BASE, expected=dataclasses.replace(BASE.expected, specialist=AGENT))
DISPATCH = call(
    "AgentTool",
    {
        "description": "payments-api crashloop",
        "subagent_type": AGENT,
        "prompt": "Find why payments-api restarts.",
    },
)
LOGS = call("k8s_logs", {"pod": "payments-api-6c9d7b8f4-2xk9p", "namespace": "payments", "previous": True})
UNDO = {
    "deployment": "payments-api",
    "namespace": "payments",
    "reason": "revision 4 reads DB_POOL_SIZE 'five'",
}
RIGHT = (
    "Root cause: the payments-config ConfigMap now sets DB_POOL_SIZE to 'five'; payments-api revision 4 "
    "exits on start. I proposed rolling payments-api back to revision 3."
)


@pytest.fixture
def with_agent(monkeypatch):
    """The sandbox gets an agent that may read pod logs and undo a rollout, through the gate."""
    create = runner.create_sandbox

    def create_with_agent(name: str, estate: dict):
        sandbox = create(name, estate)
        UserAgent.objects.create(
            organization_id=sandbox.organization_id,
            name=AGENT,
            description="Kubernetes specialist for the eval test",
            when_to_use="Pods of a deployment crash or restart.",
            body="You investigate Kubernetes workloads.",
            tools=["k8s_logs", "k8s_rollout_undo"],
            permission_mode="mutating-with-confirm",
        )
        return sandbox

    monkeypatch.setattr(runner, "create_sandbox", create_with_agent)


def _run() -> RunResult:
    return asyncio.run(run_scenario(SCENARIO, 1, RunOptions()))


def _specialist(request):
    # The recorded previous log answered the replayed read; the rollback is proposed next.
    assert "'five'" in tool_messages(request)[-1]["content"]
    return tool_calls(call("k8s_rollout_undo", UNDO))


def test_the_rollback_is_proposed_approved_and_answered_from_the_recording(agents_llm, with_agent):
    agents_llm.add("default", tool_calls(DISPATCH), text(RIGHT))
    agents_llm.add(
        AGENT, tool_calls(LOGS), _specialist, text("payments-config DB_POOL_SIZE 'five'; rolled back")
    )
    agents_llm.add("reviewer", text("Decision: approve\nRevision 3 references the previous ConfigMap."))

    result = _run()

    assert result.passed, result.as_dict()
    check = next(c for c in result.checks if c.name == "proposed_write")
    assert check.detail == "proposed k8s_rollout_undo (executed after approval)"
    assert [t for t in result.tools_used if t.startswith("k8s_")] == ["k8s_logs", "k8s_rollout_undo"]
    specialist = agents_llm.seen[AGENT][-1]
    assert "back to revision 3 (from revision 4)" in tool_messages(specialist)[-1]["content"]  # recorded
    offered = {
        t["function"]["name"]: t["function"]["description"] for t in agents_llm.seen[AGENT][0].body["tools"]
    }
    assert UNCONFIGURED not in offered["k8s_logs"]  # replayed, so not "do not call it"
    assert not Organization.objects.filter(slug=result.organization).exists()


def test_a_rejected_rollback_still_counts_as_proposed_but_naming_the_database_fails(agents_llm, with_agent):
    agents_llm.add(
        "default",
        tool_calls(DISPATCH),
        text("Root cause: pg-payments refuses connections; the ConfigMap is fine."),
    )
    agents_llm.add(AGENT, tool_calls(LOGS), _specialist, text("proposed a rollback; it was rejected"))
    agents_llm.add("reviewer", text("Decision: reject\nAsk the owner first."))

    result = _run()

    assert not result.passed
    assert result.failed_checks == ["patient_zero"]
    check = next(c for c in result.checks if c.name == "proposed_write")
    assert check.passed and check.detail == "proposed k8s_rollout_undo (decision reject)"
