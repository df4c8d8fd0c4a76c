"""The Kubernetes write tools through the whole chain: the fake API server (TLS, tokens, dry run),
the real review gate with its dry-run preview, the reviewer worker on the fake LLM, proposals and
audit rows. A change reaches the cluster for real only after the reviewer (and, for dual sign, a
person) approved it, and exactly once; everything before that is a dry run."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse

from agents_app.gate.proposals import describe_proposal
from agents_app.models import MutatingProposal
from agents_app.tools.invoke import invoke_tool
from agents_app.toolsets.contract import ToolContext
from agents_app.toolsets.kubernetes import writes
from agents_app.toolsets.registry import load_builtin_tools
from audit_app.models import AuditLog
from fakes.openai_server import text
from ops_app.models import DataSource, TopologyEdge, TopologyNode
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.gate import gated_call, make_chat, make_user_agent, make_worker
from tests.support.kubernetes import NAMESPACE, kube_api, seed_payments  # noqa: F401 - fixture

pytestmark = [
    pytest.mark.usefixtures("fresh_gate_caches"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections"),
]

OPS = "k8s-ops"
DUAL = "k8s-dual-sign"
WRITE_TOOLS = ["k8s_rollout_restart", "k8s_rollout_undo", "k8s_scale", "k8s_get"]
APPROVE = "Decision: approve\nSOP: pass — rolling back a bad config is the runbook\nRollback: pass"
REJECT = "Decision: reject\nSOP: fail — nobody confirmed the old revision is safe"
UNDO = {
    "deployment": "payments-api",
    "namespace": NAMESPACE,
    "reason": "Revision 2 moved DB_POOL_SIZE to payments-config, whose pool_size 'five' crashes every pod.",
}
DEPLOYMENT_PATH = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/payments-api"


@pytest.fixture
def cluster(org, kube_api):  # noqa: F811 - the fixture
    """The organization's cluster "prod" on the fake, seeded, its agents kept to `payments`."""
    seed_payments(kube_api)
    kube_api.clear()
    DataSource.objects.create(
        organization=org,
        name="prod",
        kind=DataSource.Kind.KUBERNETES,
        url=kube_api.url,
        auth=DataSource.Auth.BEARER,
        secret="admin-token",
        ca_bundle=kube_api.ca_pem,
        namespaces=NAMESPACE,
        is_default=True,
    )
    return kube_api


@pytest.fixture
def worker(org, member, cluster):
    make_user_agent(org, OPS, "mutating-with-confirm", WRITE_TOOLS)
    chat = make_chat(member, "payments-api is crash-looping since the last deploy; roll it back")
    return make_worker(chat, OPS)


def read_only(org) -> None:
    DataSource.objects.filter(organization=org, name="prod").update(secret="reader-token")


async def proposal_of(call_id: str) -> MutatingProposal:
    return await MutatingProposal.objects.aget(tool_call_id=call_id)


def template_env(fake) -> list[dict]:
    deployment = fake.get_object("Deployment", "payments-api", NAMESPACE, "apps/v1")
    return deployment["spec"]["template"]["spec"]["containers"][0]["env"]


def brief_of(request) -> str:
    return next(m["content"] for m in request.messages if m["role"] == "user")


# ---- rollout undo --------------------------------------------------------------------------------


async def test_undo_rejected_by_the_reviewer_sends_only_a_dry_run(worker, cluster, agents_llm):
    agents_llm.add("reviewer", text(REJECT))

    outcome = await gated_call(worker, OPS, "k8s_rollout_undo", UNDO, "undo-1")

    assert outcome.status == "rejected" and "nobody confirmed" in outcome.content
    assert cluster.writes() == []
    patches = [r for r in cluster.requests if r.method == "PATCH"]
    assert len(patches) == 1 and patches[0].dry_run and patches[0].path == DEPLOYMENT_PATH
    assert "configMapKeyRef" in str(await sync_to_async(template_env)(cluster))
    proposal = await proposal_of("undo-1")
    assert proposal.decision == "reject" and proposal.reviewer_decision == "reject"


async def test_undo_approved_patches_once_after_the_dry_run_back_to_revision_1(worker, cluster, agents_llm):
    agents_llm.add("reviewer", text(APPROVE))

    outcome = await gated_call(worker, OPS, "k8s_rollout_undo", UNDO, "undo-2")

    assert outcome.status == "ok", outcome.content
    assert "revision 1 (from revision 2)" in outcome.content
    real = cluster.writes()
    assert len(real) == 1 and real[0].method == "PATCH" and real[0].path == DEPLOYMENT_PATH
    dry = [r for r in cluster.requests if r.method == "PATCH" and r.dry_run]
    assert len(dry) == 1 and dry[0].at < real[0].at
    # The deployment runs revision 1's template again: the literal pool size, no ConfigMap ref,
    # and no pod-template-hash label copied from the ReplicaSet.
    deployment = await sync_to_async(cluster.get_object)("Deployment", "payments-api", NAMESPACE, "apps/v1")
    template = deployment["spec"]["template"]
    assert template["spec"]["containers"][0]["env"] == [{"name": "DB_POOL_SIZE", "value": "20"}]
    assert "pod-template-hash" not in template["metadata"]["labels"]
    proposal = await proposal_of("undo-2")
    assert proposal.executed_at is not None and proposal.failed_at is None


async def test_the_proposal_and_the_reviewer_see_the_dry_run_diff(worker, cluster, agents_llm, org):
    checkout = await TopologyNode.objects.acreate(organization=org, name="checkout-web")
    api = await TopologyNode.objects.acreate(organization=org, name="payments-api")
    await TopologyEdge.objects.acreate(organization=org, source=checkout, target=api, protocol="http")
    agents_llm.add("reviewer", text(REJECT))

    await gated_call(worker, OPS, "k8s_rollout_undo", UNDO, "undo-3")

    proposal = await proposal_of("undo-3")
    payload = proposal.payload
    assert payload["action"] == f"kubectl rollout undo deployment/payments-api -n {NAMESPACE}"
    assert payload["target"] == f"prod/{NAMESPACE}/deployment/payments-api"
    assert payload["blast_radius"] == "namespace"
    dry_run = payload["dry_run"]
    assert dry_run["ok"] is True and "revision 1" in dry_run["summary"]
    assert dry_run["replicas"] == 3 and dry_run["namespace"] == NAMESPACE
    assert dry_run["dependants"] == ["checkout-web"] and "checkout-web" in dry_run["blast"]
    lines = dry_run["diff"].splitlines()
    assert 'spec.containers[app].env[DB_POOL_SIZE].value: (none) → "20"' in lines
    assert (
        'spec.containers[app].env[DB_POOL_SIZE].valueFrom.configMapKeyRef.name: "payments-config" → (none)'
        in lines
    )
    brief = brief_of(agents_llm.seen["reviewer"][0])
    assert "Server-side dry run" in brief and "configMapKeyRef.name" in brief and "checkout-web" in brief


async def test_a_read_only_token_fails_the_dry_run_and_nobody_reviews(worker, cluster, agents_llm, org):
    await sync_to_async(read_only)(org)

    outcome = await gated_call(worker, OPS, "k8s_rollout_undo", UNDO, "undo-4")

    assert outcome.status == "rejected"
    assert "dry run failed" in outcome.content and "403" in outcome.content
    assert "cannot patch" in outcome.content
    assert cluster.writes() == [] and agents_llm.seen.get("reviewer", []) == []
    proposal = await proposal_of("undo-4")
    assert proposal.decision == "reject" and proposal.reviewer_session_id is None
    assert proposal.payload["dry_run"]["ok"] is False
    assert (await AuditLog.objects.aget(tool_call_id="undo-4")).status == "rejected"


async def test_an_unknown_revision_is_rejected_without_the_reviewer(worker, cluster, agents_llm):
    outcome = await gated_call(worker, OPS, "k8s_rollout_undo", {**UNDO, "to_revision": 9}, "undo-5")

    assert outcome.status == "rejected" and "no revision 9" in outcome.content
    assert "its revisions: 1, 2" in outcome.content
    assert cluster.writes() == [] and agents_llm.seen.get("reviewer", []) == []


async def test_a_namespace_not_allowed_is_refused_before_any_request(worker, cluster, agents_llm):
    outcome = await gated_call(
        worker, OPS, "k8s_rollout_undo", {**UNDO, "namespace": "kube-system"}, "undo-6"
    )

    assert (
        outcome.status == "rejected"
        and "namespace 'kube-system' is not allowed on cluster 'prod' (allowed: payments)" in outcome.content
    )
    assert "allowed: payments" in outcome.content
    assert (
        cluster.requests == [] and not await MutatingProposal.objects.filter(tool_call_id="undo-6").aexists()
    )


async def test_a_write_the_cluster_refuses_after_approval_is_failed_not_executed(
    worker, cluster, agents_llm, org
):
    """The dry run passed, then the token lost its rights before the real write."""
    real_preview = writes.preview_k8s_rollout_undo

    async def preview_then_revoke(ctx, arguments):
        answer = await real_preview(ctx, arguments)
        await sync_to_async(read_only)(org)
        return answer

    tool = dataclasses.replace(load_builtin_tools()["k8s_rollout_undo"], preview=preview_then_revoke)
    agents_llm.add("reviewer", text(APPROVE))

    outcome = await _call_tool(worker, tool, UNDO, "undo-7")

    assert outcome.status == "error" and "403" in outcome.content
    assert cluster.writes()[0].status == 403
    proposal = await proposal_of("undo-7")
    assert proposal.executed_at is None and proposal.failed_at is not None
    assert "cannot patch" in proposal.execution_error
    card = await sync_to_async(describe_proposal)(proposal)
    assert card["outcome"] == "failed" and "403" in card["failure_reason"]


async def _call_tool(worker, tool, arguments: dict, call_id: str):
    ctx = ToolContext(
        organization_id=worker.organization_id,
        session_id=worker.pk,
        user_id=worker.user_id,
        persona_name=OPS,
        tool_call_id=call_id,
    )
    return await invoke_tool(tool, ctx, json.dumps(arguments))


# ---- dual sign -----------------------------------------------------------------------------------


async def test_a_dual_sign_undo_waits_for_the_person_and_nothing_is_written_until_then(
    org, member, cluster, agents_llm, settings
):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, approval_timeout=30.0)
    await sync_to_async(make_user_agent)(org, DUAL, "dual-sign-required", WRITE_TOOLS)
    chat = await sync_to_async(make_chat)(member, "roll payments-api back")
    worker = await sync_to_async(make_worker)(chat, DUAL)
    agents_llm.add("reviewer", text(APPROVE))

    call = asyncio.create_task(gated_call(worker, DUAL, "k8s_rollout_undo", UNDO, "undo-d"))
    proposal = await _awaiting_human("undo-d")

    assert not call.done() and cluster.writes() == []
    assert proposal.payload["dry_run"]["ok"] is True
    client = Client()
    await sync_to_async(client.force_login)(member)
    response = await sync_to_async(client.post)(reverse("proposal-approve", args=[proposal.pk]))
    assert response.status_code == 200
    outcome = await asyncio.wait_for(call, 20)
    assert outcome.status == "ok" and len(cluster.writes()) == 1


async def _awaiting_human(call_id: str, within: float = 20.0) -> MutatingProposal:
    """The proposal once the reviewer approved it and it waits for a person (the gate's own poll)."""
    async with asyncio.timeout(within):
        while True:
            proposal = await MutatingProposal.objects.filter(tool_call_id=call_id).afirst()
            if proposal is not None and proposal.awaiting_human:
                return proposal
            await asyncio.sleep(0.05)


# ---- scale and restart ---------------------------------------------------------------------------


async def test_scale_is_dry_run_then_sets_the_replicas(worker, cluster, agents_llm):
    agents_llm.add("reviewer", text(APPROVE))
    arguments = {"name": "ledger", "namespace": NAMESPACE, "replicas": 5, "reason": "Month-end load."}

    outcome = await gated_call(worker, OPS, "k8s_scale", arguments, "scale-1")

    assert outcome.status == "ok", outcome.content
    real = cluster.writes()
    assert len(real) == 1 and real[0].path.endswith("/deployments/ledger/scale")
    ledger = await sync_to_async(cluster.get_object)("Deployment", "ledger", NAMESPACE, "apps/v1")
    assert ledger["spec"]["replicas"] == 5
    proposal = await proposal_of("scale-1")
    assert proposal.payload["action"] == f"kubectl scale deployment/ledger -n {NAMESPACE} --replicas=5"
    assert proposal.payload["dry_run"]["diff"] == "replicas: 2 → 5"


async def test_restart_annotates_the_template_once_approved(worker, cluster, agents_llm):
    agents_llm.add("reviewer", text(APPROVE))
    arguments = {"deployment": "ledger", "namespace": NAMESPACE, "reason": "Stuck connections."}

    outcome = await gated_call(worker, OPS, "k8s_rollout_restart", arguments, "restart-1")

    assert outcome.status == "ok", outcome.content
    assert len(cluster.writes()) == 1
    ledger = await sync_to_async(cluster.get_object)("Deployment", "ledger", NAMESPACE, "apps/v1")
    assert writes.RESTARTED_AT in ledger["spec"]["template"]["metadata"]["annotations"]
    diff = (await proposal_of("restart-1")).payload["dry_run"]["diff"]
    assert diff.startswith(f"metadata.annotations.{writes.RESTARTED_AT}: (none) → ")


# ---- the pieces ----------------------------------------------------------------------------------


def test_the_registry_binds_each_write_tool_to_its_dry_run():
    tools = load_builtin_tools()
    for name in ("k8s_rollout_restart", "k8s_rollout_undo", "k8s_scale"):
        assert tools[name].preview is getattr(writes, f"preview_{name}")
        assert tools[name].describe is getattr(writes, f"describe_{name}")
    assert tools["host_restart_service"].preview is None


def test_merge_patch_nulls_what_the_old_revision_lacks():
    current = {"a": 1, "b": {"c": 2, "d": 3}, "l": [1, 2]}
    desired = {"a": 1, "b": {"c": 2}, "l": [1]}
    assert writes.merge_patch(current, desired) == {"b": {"d": None}, "l": [1]}


def test_a_secret_looking_env_value_is_masked_in_the_diff():
    before = {"spec": {"containers": [{"name": "app", "env": [{"name": "DB_PASSWORD", "value": "hunter2"}]}]}}
    after = {"spec": {"containers": [{"name": "app", "env": [{"name": "DB_PASSWORD", "value": "s3cret"}]}]}}
    lines = writes.diff_lines(before, after)
    assert lines == ["spec.containers[app].env[DB_PASSWORD].value: *** → ***"]
