"""`--live`: a scenario run against the real back ends. Nothing is replayed (a query the recordings
answer reaches the real Prometheus instead), while the estate is still loaded into the throwaway
organization and removed afterwards."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from agents_app.tools.replay import registered_organizations
from evals_app.runner import RunOptions, RunResult, run_scenario
from evals_app.scenarios import SCENARIOS_DIR, load_scenario
from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls
from ops_app.models import Organization
from tests.support.prometheus import prometheus_server  # noqa: F401 - fixture

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]

SCENARIO = load_scenario(SCENARIOS_DIR / "config-change-pool" / "scenario.yaml")
DISPATCH = call(
    "AgentTool",
    {"description": "Why checkout fails", "subagent_type": "incident-investigator", "prompt": "Find it."},
)
RECORDED_QUERY = 'max(db_pool_waiting_connections{service="payments"})'  # the recordings say 37
LOOKS = tool_calls(
    call("query_promql", {"query": RECORDED_QUERY}),
    call("query_promql", {"query": "node_load1"}),
    call("query_devices", {}),
)


def _script(agents_llm, replays_seen: list) -> None:
    def conclude(request):
        replays_seen.append(registered_organizations())  # while the turn runs
        return text("payments-01")

    agents_llm.add("default", tool_calls(DISPATCH), text("Root cause: payments-01 (live run)."))
    agents_llm.add("incident-investigator", LOOKS, conclude)


def _run(live: bool) -> RunResult:
    return asyncio.run(run_scenario(SCENARIO, 1, RunOptions(live=live)))


def _investigator_results(agents_llm) -> list[dict]:
    return [json.loads(m["content"]) for m in tool_messages(agents_llm.seen["incident-investigator"][-1])]


def test_live_run_queries_the_real_prometheus_and_still_loads_the_estate(
    agents_llm,
    settings,
    prometheus_server,  # noqa: F811
):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, prometheus_url=prometheus_server.url)
    replays_seen: list = []
    _script(agents_llm, replays_seen)
    result = _run(live=True)

    pool, load, devices = _investigator_results(agents_llm)
    assert "37" not in json.dumps(pool) and pool.get("status") != "no_data"  # not the recording
    assert prometheus_server.node_exporter_address in json.dumps(load)  # a real series
    assert {d["name"] for d in devices["devices"]} == {"checkout-01", "payments-01", "pg-01"}
    assert replays_seen == [[]]
    assert result.tools_used == ["AgentTool", "query_promql", "query_promql", "query_devices"]
    assert not Organization.objects.filter(slug=result.organization).exists()


def test_without_live_the_same_queries_are_answered_from_the_recordings(
    agents_llm,
    settings,
    prometheus_server,  # noqa: F811
):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, prometheus_url=prometheus_server.url)
    replays_seen: list = []
    _script(agents_llm, replays_seen)
    result = _run(live=False)

    pool, load, _ = _investigator_results(agents_llm)
    assert pool["series"][0]["last"] == 37
    assert load["status"] == "no_data"
    assert len(replays_seen) == 1 and len(replays_seen[0]) == 1  # this run's organization, replayed
    assert registered_organizations() == []
    assert result.organization
