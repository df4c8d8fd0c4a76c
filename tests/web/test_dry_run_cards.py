"""A change's dry run on its approval cards (docs/review-gate.md "Dry run"): the chat page shows
what the system said and, folded, what would change; the IM card the first lines of it."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import translation

from agents_app.gate import proposals
from im_app.conversation import IM_DIFF_LINES, card_summary
from tests.support import audit_rows
from tests.support.gate import make_chat, make_worker
from web_app.chat.fragments import proposal_card

pytestmark = pytest.mark.django_db

DIFF = "\n".join(
    [
        'spec.containers[app].env[DB_POOL_SIZE].value: (none) → "20"',
        'spec.containers[app].env[DB_POOL_SIZE].valueFrom.configMapKeyRef.name: "payments-config" → (none)',
    ]
    + [f'metadata.annotations.note-{n}: (none) → "<b>{n}</b>"' for n in range(8)]
)
DRY_RUN = {
    "ok": True,
    "summary": "the API server accepted the dry run: it would roll deployment/payments-api back to "
    "revision 1",
    "diff": DIFF,
    "replicas": 3,
    "namespace": "payments",
    "blast": "3 replicas of deployment/payments-api in namespace payments; "
    "depend on it (topology): checkout-web",
}
PAYLOAD = {
    "action": "kubectl rollout undo deployment/payments-api -n payments",
    "target": "prod/payments/deployment/payments-api",
    "reason": "revision 2 crashes every pod",
    "blast_radius": "namespace",
    "operator": "agent k8s-dual-sign for alice",
    "dry_run": DRY_RUN,
}


def held(owner, payload: dict = PAYLOAD) -> proposals.MutatingProposal:
    """A dual-sign proposal the reviewer approved, waiting for `owner`."""
    worker = make_worker(make_chat(owner), "k8s-dual-sign")
    proposal = proposals.create_proposal(
        session_id=worker.pk,
        tool_call_id="c-1",
        tool="k8s_rollout_undo",
        tool_class="write",
        persona="k8s-dual-sign",
        permission_mode="dual-sign-required",
        arguments={"deployment": "payments-api", "namespace": "payments"},
        payload=payload,
    )
    proposals.record_review(proposal.pk, True, "SOP: pass")
    proposal.refresh_from_db()
    return proposal


def test_the_chat_page_shows_the_dry_run_and_its_diff_folded(member):
    proposal = held(member)
    client = Client()
    client.force_login(member)

    html = client.get(reverse("chat-page", args=[proposal.root_session_id])).content.decode()

    card = html.split(f'id="proposal-{proposal.pk}"')[1].split("</article>")[0]
    assert "Dry run" in card and "would roll deployment/payments-api back to revision 1" in card
    folded = card.split('<details class="proposal-diff">')[1].split("</details>")[0]
    assert "<summary>What would change</summary>" in folded
    assert "configMapKeyRef.name: &quot;payments-config&quot; → (none)" in folded
    assert "&lt;b&gt;7&lt;/b&gt;" in folded and "<b>7</b>" not in folded  # the diff is text, escaped
    assert "namespace · 3 replicas of deployment/payments-api" in card and "checkout-web" in card


def test_a_refused_dry_run_is_marked_failed_and_a_card_without_one_has_no_section(member):
    refused = {"ok": False, "summary": "the dry run failed: 403 Forbidden", "diff": ""}
    card = proposals.describe_proposal(held(member, {**PAYLOAD, "dry_run": refused}))
    assert 'class="proposal-dry-run failed"' in proposal_card(card) and "<details" not in proposal_card(card)

    plain = proposals.describe_proposal(held(member, {k: v for k, v in PAYLOAD.items() if k != "dry_run"}))
    assert plain["dry_run"] is None and "proposal-dry-run" not in proposal_card(plain)


def test_the_card_labels_are_translated(member):
    card = proposals.describe_proposal(held(member))
    with translation.override("es"):
        html = proposal_card(card)
        lines = card_summary(card)
    assert "Ensayo en seco" in html and "Qué cambiaría" in html
    assert any(line.startswith("Ensayo en seco: the API server accepted") for line in lines)
    assert "Alcance del impacto: Espacio de nombres" in lines


def test_the_im_card_shows_the_first_lines_of_the_diff_and_how_many_more(member):
    lines = card_summary(proposals.describe_proposal(held(member)))

    assert "Blast radius: Namespace" in lines
    assert f"Dry run: {DRY_RUN['summary']}" in lines and DRY_RUN["blast"] in lines
    shown = [line for line in lines if line.startswith(("spec.", "metadata."))]
    assert shown == DIFF.splitlines()[:IM_DIFF_LINES]
    assert f"More changes not shown here: {10 - IM_DIFF_LINES}." in lines


def test_the_audit_call_page_shows_the_dry_run_readably(org, member, auditor):
    chat = audit_rows.session(org, member, title="roll payments-api back")
    worker = audit_rows.session(org, member, parent=chat, agent_id="k8s-dual-sign")
    write, _ = audit_rows.gated_write(worker, "c-1")
    proposals.create_proposal(
        session_id=worker.pk,
        tool_call_id="c-1",
        tool="k8s_rollout_undo",
        tool_class="write",
        persona="k8s-dual-sign",
        permission_mode="dual-sign-required",
        arguments={},
        payload=PAYLOAD,
    )
    client = Client()
    client.force_login(auditor)

    html = client.get(reverse("audit-call", args=[write.pk])).content.decode()

    shown = html[html.index('<div class="proposal">') :].split("<dt>dry_run</dt>")[1].split("</dd>")[0]
    assert '<span class="status status-ok">the API server accepted the dry run' in shown
    assert '<pre class="proposal-diff">' in shown and "configMapKeyRef.name" in shown
    assert "{&#x27;ok&#x27;" not in shown  # not the dict's repr
