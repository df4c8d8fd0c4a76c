"""An approved change that ran and failed says so on every card, with the reason: the web chat's
approval card and the IM card never read "executed" for it (issue 29, finding 4)."""

from __future__ import annotations

import pytest

from agents_app.gate import proposals
from im_app.conversation import card_summary
from tests.support.gate import make_chat, make_worker
from web_app.chat.fragments import proposal_card

pytestmark = pytest.mark.django_db

PAYLOAD = {
    "action": "restart service",
    "target": "web-01",
    "reason": "nginx is down",
    "blast_radius": "single_device",
    "operator": "agent ops-dual-sign for alice",
}
REFUSAL = "Host key verification failed."


def approved_and_run(owner, status: str, error: str = "") -> dict:
    worker = make_worker(make_chat(owner), "ops-dual-sign")
    proposal = proposals.create_proposal(
        session_id=worker.pk,
        tool_call_id="c-1",
        tool="host_restart_service",
        tool_class="write",
        persona="ops-dual-sign",
        permission_mode="dual-sign-required",
        arguments={"host": "web-01", "service": "nginx"},
        payload=PAYLOAD,
    )
    proposals.record_review(proposal.pk, True, "SOP: pass")
    proposals.sign(proposals.MutatingProposal.objects.get(pk=proposal.pk), owner, True, "go")
    assert proposals.mark_executed(proposal.pk, status, error)
    return proposals.describe_proposal(proposals.MutatingProposal.objects.get(pk=proposal.pk))


def test_a_failed_run_reads_approved_failed_with_its_reason_on_both_cards(member):
    card = approved_and_run(member, "error", REFUSAL)
    web = proposal_card(card)
    assert f"Approved · failed: {REFUSAL}" in web
    assert "executed" not in web.split('class="proposal-status"')[1].split("</span>")[0]
    assert card_summary(card)[-1] == f"Approved · failed: {REFUSAL}"
    assert not any("executed" in line for line in card_summary(card))


def test_a_successful_run_reads_approved_executed(member):
    card = approved_and_run(member, "ok")
    assert "Approved · executed" in proposal_card(card)
    assert card_summary(card)[-1] == "Approved · executed."


def test_a_long_failure_is_cut_at_a_word_on_the_status_line_and_shown_whole_below(member):
    long_error = "the device uses the strict host-key policy but has no known-hosts entry; " * 6
    card = approved_and_run(member, "error", long_error.strip())
    web = proposal_card(card)
    status = web.split('class="proposal-status">')[1].split("</span>")[0]
    head = status.split("failed: ")[1]
    assert head.endswith("more characters)") and "… (" in head
    shown = head.split("…")[0]
    assert long_error.startswith(shown) and long_error[len(shown)] == " "  # cut at a space
    assert "Failed when it ran" in web and long_error.strip()[-40:] in web  # the whole error, below
    im_line = card_summary(card)[-1]
    assert im_line.startswith("Approved · failed: the device") and im_line.endswith("more characters)")
