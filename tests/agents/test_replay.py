"""Replay in the tool chain (agents_app/tools/replay.py): recordings answer one organization's calls,
unmatched calls get the documented "no data", other organizations and later calls run for real."""

from __future__ import annotations

import dataclasses
import json

import pytest

from agents_app.tools.binding import organization_tools
from agents_app.tools.invoke import invoke_tool
from agents_app.tools.replay import NO_DATA, Recording, Replay, registered, replaying
from agents_app.toolsets.contract import UNCONFIGURED, ToolContext
from agents_app.toolsets.registry import get_builtin_tool
from audit_app.models import AuditLog

pytestmark = pytest.mark.django_db(transaction=True)

RECORDED = {"resultType": "vector", "series": [{"labels": {"service": "payments"}, "last": 37}]}


def _replay() -> Replay:
    return Replay(
        (Recording("query_promql", {"query": "db_pool_waiting"}, "contains", RECORDED),),
        frozenset({"query_promql"}),
    )


async def _promql(org_id: int, query: str) -> dict:
    ctx = ToolContext(organization_id=org_id, tool_call_id=f"c-{query[:8]}")
    outcome = await invoke_tool(get_builtin_tool("query_promql"), ctx, json.dumps({"query": query}))
    assert outcome.status == "ok", outcome.content
    return json.loads(outcome.content)


async def test_recordings_answer_only_their_organization_and_only_while_registered(
    org, other_org, settings, close_async_db_connections
):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, prometheus_url=None)
    with replaying(org.pk, _replay()):
        matched = await _promql(org.pk, 'max(db_pool_waiting_connections{service="payments"})')
        unmatched = await _promql(org.pk, "up")
        foreign = await _promql(other_org.pk, 'db_pool_waiting_connections{service="payments"}')
    after = await _promql(org.pk, 'db_pool_waiting_connections{service="payments"}')

    assert matched == RECORDED
    assert unmatched == NO_DATA
    assert foreign["status"] == "not_configured"  # the real tool: no Prometheus configured
    assert after["status"] == "not_configured"
    assert registered(org.pk) is None
    rows = [row async for row in AuditLog.objects.filter(organization=org).order_by("pk")]
    assert [r.tool for r in rows] == ["query_promql"] * 3
    assert rows[0].status == "ok" and "37" in rows[0].result


async def test_validation_still_runs_before_a_replayed_call(org, close_async_db_connections):
    with replaying(org.pk, _replay()):
        ctx = ToolContext(organization_id=org.pk, tool_call_id="bad")
        outcome = await invoke_tool(get_builtin_tool("query_promql"), ctx, json.dumps({"q": "x"}))
    assert outcome.status == "error" and "invalid arguments" in outcome.content


def test_matchers():
    call = {"query": "sum(rate(http_requests_total[5m]))", "start": "now-1h"}
    assert Recording("t", {"query": "HTTP_requests_total"}, "contains").matches(call)
    assert Recording("t", {"start": "now-1h"}, "subset").matches(call)
    assert not Recording("t", {"start": "now-2h"}, "subset").matches(call)
    assert Recording("t", {"query": r"rate\(http_\w+"}, "regex").matches(call)
    assert not Recording("t", {"query": "up"}, "exact").matches(call)
    assert Recording("t", {}, "any").matches(call)
    exact = Recording("t", dict(call), "exact", output="exact")
    loose = Recording("t", {}, "any", output="loose")
    assert Replay((loose, exact), frozenset({"t"})).answer("t", dict(call)) == "exact"


async def test_a_replayed_tool_is_offered_as_configured_to_its_organization_only(org, other_org, settings):
    """An evaluation's organization has no data sources: the tools its recordings answer must not
    tell the model "do not call it", while the tools they do not cover (and every other
    organization's) still do."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, prometheus_url=None, loki_url=None)
    replay = Replay((), frozenset({"query_promql", "k8s_get"}))
    with replaying(org.pk, replay):
        ours = await organization_tools(org.pk)
        theirs = await organization_tools(other_org.pk)
    after = await organization_tools(org.pk)

    assert UNCONFIGURED not in ours["query_promql"].description
    assert UNCONFIGURED not in ours["k8s_get"].description
    assert UNCONFIGURED in ours["query_logql"].description  # not covered by the replay
    assert UNCONFIGURED in theirs["query_promql"].description
    assert UNCONFIGURED in after["query_promql"].description and UNCONFIGURED in after["k8s_get"].description
