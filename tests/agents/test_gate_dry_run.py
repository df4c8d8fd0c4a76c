"""The review gate's dry-run hook (docs/review-gate.md "Dry run"), generic: any write tool with a
`preview` has it run after `describe` and before the reviewer. Its answer is kept on the
proposal (masked), shown to the reviewer, and a failed rehearsal rejects the call unreviewed.
Here a stand-in preview is put on `acknowledge_incident`, whose effect is easy to observe."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from agents_app.models import MutatingProposal
from agents_app.tools.invoke import invoke_tool
from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.registry import load_builtin_tools
from fakes.openai_server import text
from ops_app.models import Incident
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.gate import ack_arguments, make_chat, make_incident, make_worker

pytestmark = [
    pytest.mark.usefixtures("fresh_gate_caches"),
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections"),
]

APPROVE = "Decision: approve\nSOP: pass\nConcurrent work: pass\nRollback: pass"
TOKEN = "ghp_" + "a1B2" * 9


@pytest.fixture
def scene(org, member):
    chat = make_chat(member)
    return make_worker(chat), make_incident(org)


async def call_with_preview(worker, incident, preview, call_id: str):
    """acknowledge_incident from specialist-ops, its tool given `preview` as its dry run."""
    tool = dataclasses.replace(load_builtin_tools()["acknowledge_incident"], preview=preview, timeout=2.0)
    ctx = ToolContext(
        organization_id=worker.organization_id,
        session_id=worker.pk,
        user_id=worker.user_id,
        persona_name="specialist-ops",
        tool_call_id=call_id,
    )
    return await invoke_tool(tool, ctx, json.dumps(ack_arguments(incident)))


async def status_of(incident) -> str:
    return (await Incident.objects.aget(pk=incident.pk)).status


async def test_a_passing_dry_run_is_kept_masked_and_shown_to_the_reviewer(scene, agents_llm):
    worker, incident = scene
    agents_llm.add("reviewer", text(APPROVE))

    async def preview(ctx, arguments):
        return {
            "ok": True,
            "summary": "would acknowledge",
            "diff": f"status: firing → acknowledged\nkey: {TOKEN}",
        }

    outcome = await call_with_preview(worker, incident, preview, "p-1")

    assert outcome.status == "ok" and await status_of(incident) == "acknowledged"
    dry_run = (await MutatingProposal.objects.aget(tool_call_id="p-1")).payload["dry_run"]
    assert dry_run["ok"] is True and "status: firing → acknowledged" in dry_run["diff"]
    assert TOKEN not in json.dumps(dry_run)
    brief = next(m["content"] for m in agents_llm.seen["reviewer"][0].messages if m["role"] == "user")
    assert "Server-side dry run (nothing was changed): would acknowledge" in brief
    assert "status: firing → acknowledged" in brief and TOKEN not in brief


async def test_a_failed_dry_run_rejects_without_the_reviewer_or_the_tool(scene, agents_llm):
    worker, incident = scene

    async def preview(ctx, arguments):
        return {"ok": False, "summary": "the dry run failed: 404 NotFound"}

    outcome = await call_with_preview(worker, incident, preview, "p-2")

    assert outcome.status == "rejected" and "the dry run failed: 404 NotFound" in outcome.content
    assert await status_of(incident) == "firing" and agents_llm.seen.get("reviewer", []) == []
    proposal = await MutatingProposal.objects.aget(tool_call_id="p-2")
    assert proposal.decision == "reject" and proposal.decision_reason == "the dry run failed: 404 NotFound"


@pytest.mark.parametrize(
    ("behaviour", "said"),
    [("raise", "could not be run (RuntimeError)"), ("hang", "did not answer within 2s"), ("vague", "")],
)
async def test_a_broken_dry_run_never_lets_the_call_through(scene, agents_llm, behaviour, said):
    worker, incident = scene

    async def preview(ctx, arguments):
        if behaviour == "raise":
            raise RuntimeError("boom")
        if behaviour == "hang":
            await asyncio.Event().wait()
        return {"summary": "no verdict"}  # `ok` missing: not a pass

    outcome = await call_with_preview(worker, incident, preview, f"p-{behaviour}")

    assert outcome.status == "rejected" and said in outcome.content
    assert await status_of(incident) == "firing" and agents_llm.seen.get("reviewer", []) == []


async def test_a_dry_run_refusing_the_call_outright_stores_no_proposal(scene, agents_llm):
    worker, incident = scene

    async def preview(ctx, arguments):
        raise ToolError("namespace 'kube-system' is not allowed")

    outcome = await call_with_preview(worker, incident, preview, "p-3")

    assert outcome.status == "rejected" and "'kube-system' is not allowed" in outcome.content
    assert not await MutatingProposal.objects.filter(tool_call_id="p-3").aexists()
