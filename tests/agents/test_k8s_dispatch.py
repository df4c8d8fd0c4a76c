"""End to end with the fake model and the fake cluster: the coordinator, steered by the k8s_get
redirect stub, dispatches specialist-k8s, which reads pods, describes one, reads its previous log
and the rollout history through the real tools, and names the ConfigMap change as the cause."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents_app.runtime.core import Runtime
from audit_app.models import AuditLog
from chat_app import services
from chat_app.models import ChatSession, SessionStatus
from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls
from ops_app.models import DataSource
from tests.support.kubernetes import CRASH_LINE, NEW_RS, kube_api, seed_payments  # noqa: F401 - fixture

pytestmark = [pytest.mark.usefixtures("fresh_gate_caches"), pytest.mark.django_db(transaction=True)]
QUESTION = "Why are the payments pods restarting?"


@pytest.fixture
def cluster(org, kube_api):  # noqa: F811
    seed_payments(kube_api)
    DataSource.objects.create(
        organization=org,
        kind=DataSource.Kind.KUBERNETES,
        name="prod",
        url=kube_api.url,
        auth=DataSource.Auth.BEARER,
        secret="reader-token",
        ca_bundle=kube_api.ca_pem,
        is_default=True,
    )
    return kube_api


def last_result(request) -> dict:
    return json.loads(tool_messages(request)[-1]["content"])


def describe_first_pod(request):
    pod = last_result(request)["rows"][0]["name"]
    return tool_calls(call("k8s_describe", {"kind": "pod", "name": pod, "namespace": "payments"}))


def previous_log(request):
    described = last_result(request)
    arguments = {"pod": described["name"], "namespace": "payments", "previous": True}
    return tool_calls(call("k8s_logs", arguments))


def rollout_history(request):
    return tool_calls(call("k8s_rollout_history", {"deployment": "payments-api", "namespace": "payments"}))


def conclude(request):
    """The specialist's answer, made only of what its tool results said."""
    results = [json.loads(m["content"]) for m in tool_messages(request)]
    crash = results[-2]["lines"].splitlines()[-1]
    change = next(c for c in results[-1]["revisions"][0]["changes"] if "ConfigMap" in c)
    return text(f"Cause: revision {results[-1]['current_revision']} {change}. Crash: {crash}")


async def test_the_coordinator_dispatches_the_k8s_specialist_who_finds_the_configmap_change(
    member, agents_llm, cluster
):
    chat = await sync_to_async(services.start_chat)(member)
    brief = "In cluster prod, namespace payments: why do the payments-api pods restart?"
    dispatch = {"description": "payments pods", "subagent_type": "specialist-k8s", "prompt": brief}
    agents_llm.add(
        "default",
        tool_calls(call("k8s_get", {"kind": "pods", "namespace": "payments"})),
        tool_calls(call("AgentTool", dispatch)),
        lambda request: text(tool_messages(request)[-1]["content"]),
    )
    agents_llm.add(
        "specialist-k8s",
        tool_calls(
            call("k8s_get", {"kind": "pods", "namespace": "payments", "label_selector": "app=payments-api"})
        ),
        describe_first_pod,
        previous_log,
        rollout_history,
        conclude,
    )
    await services.abegin_turn(chat.pk, QUESTION)
    result = await Runtime().run_turn(chat.pk)

    assert result.status == "completed"
    redirect = json.loads(tool_messages(agents_llm.seen["default"][1])[0]["content"])
    assert redirect["status"] == "redirect" and 'subagent_type="specialist-k8s"' in redirect["suggested_call"]
    assert await AuditLog.objects.filter(session=chat, tool="k8s_get", status="redirect").aexists()
    answer = json.loads(tool_messages(agents_llm.seen["default"][2])[-1]["content"])["result"]
    assert "env DB_POOL_SIZE changed: 20 → from ConfigMap payments-config key pool_size" in answer
    assert CRASH_LINE in answer

    worker = await ChatSession.objects.aget(parent_session=chat)
    assert (worker.agent_id, worker.status) == ("specialist-k8s", SessionStatus.COMPLETED)
    rows = [row async for row in AuditLog.objects.filter(session=worker).order_by("pk")]
    assert [(r.tool, r.status) for r in rows] == [
        ("k8s_get", "ok"),
        ("k8s_describe", "ok"),
        ("k8s_logs", "ok"),
        ("k8s_rollout_history", "ok"),
    ]
    assert '"status":"CrashLoopBackOff"' in rows[0].result and f"ReplicaSet/{NEW_RS}" in rows[1].result
    assert CRASH_LINE.replace('"', '\\"') in rows[2].result and "payments-config" in rows[3].result
    seen = [(r.path, r.query.get("previous")) for r in cluster.requests]
    assert ("/api/v1/namespaces/payments/pods", None) in seen
    assert any(path.endswith("/log") and previous == "true" for path, previous in seen)
    assert ("/apis/apps/v1/namespaces/payments/replicasets", None) in seen
    assert {r.token for r in cluster.requests} == {"reader-token"} and cluster.writes() == []
