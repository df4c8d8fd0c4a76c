"""`POST /api/proposals/{id}/approve|reject/`: who may sign a dual-sign change, and what a
late, foreign or premature signature does (nothing, with a clear answer)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from agents_app.gate import proposals
from agents_app.models import MutatingProposal
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.gate import make_chat, make_worker

pytestmark = pytest.mark.django_db

PAYLOAD = {
    "action": "acknowledge incident",
    "target": "incident:7",
    "reason": "On call confirmed <b>now</b>",
    "blast_radius": "single_device",
    "operator": "agent ops-dual-sign for alice",
    "context_summary": "Ack it.",
}


def held(owner, *, mode: str = "dual-sign-required", reviewed: bool | None = True) -> MutatingProposal:
    """A proposal from `owner`'s chat; reviewed=True: the reviewer approved (a human is now needed)."""
    worker = make_worker(make_chat(owner), "ops-dual-sign")
    proposal = proposals.create_proposal(
        session_id=worker.pk,
        tool_call_id="c-1",
        tool="acknowledge_incident",
        tool_class="write",
        persona="ops-dual-sign",
        permission_mode=mode,
        arguments={"incident_id": 7, "reason": PAYLOAD["reason"]},
        payload=PAYLOAD,
    )
    if reviewed is not None:
        proposals.record_review(proposal.pk, reviewed, "SOP: pass")
    proposal.refresh_from_db()
    return proposal


def client_for(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def post(user, proposal, verb: str = "approve", **kwargs):
    return client_for(user).post(reverse(f"proposal-{verb}", args=[proposal.pk]), **kwargs)


def test_the_chats_owner_approves(member):
    proposal = held(member)
    assert proposal.awaiting_human

    response = post(member, proposal)

    assert response.status_code == 200
    body = response.json()
    assert body["decision"] == "approve" and not body["awaiting_human"]
    proposal.refresh_from_db()
    assert proposal.human_approver == member and proposal.human_decision == "approve"
    assert proposal.decision_reason == "approved by alice" and proposal.decided_at is not None


def test_an_org_admin_may_reject_with_a_reason(member, org_admin):
    proposal = held(member)

    response = post(org_admin, proposal, "reject", data={"reason": "Not during the sale"})

    assert response.status_code == 200 and response.json()["decision"] == "reject"
    proposal.refresh_from_db()
    assert proposal.human_approver == org_admin and proposal.decision_reason == "Not during the sale"


@pytest.mark.parametrize("who", ["auditor", "colleague"])
def test_other_members_of_the_organization_may_not_sign(member, auditor, org, who):
    signer = auditor if who == "auditor" else create_user("carol", "carol-pass-123", org, roles.MEMBER)
    proposal = held(member)

    response = post(signer, proposal)

    assert response.status_code == 403 and "owner or an org admin" in response.json()["detail"]
    proposal.refresh_from_db()
    assert proposal.awaiting_human and proposal.human_approver is None


def test_another_tenant_cannot_see_or_sign(member, outsider):
    proposal = held(member)
    assert post(outsider, proposal).status_code == 404
    proposal.refresh_from_db()
    assert proposal.awaiting_human


def test_anonymous_is_refused(member):
    proposal = held(member)
    assert post(None, proposal).status_code in (401, 403)
    proposal.refresh_from_db()
    assert proposal.awaiting_human


def test_a_second_signature_changes_nothing(member, org_admin):
    proposal = held(member)
    post(member, proposal, "approve")

    response = post(org_admin, proposal, "reject")

    assert response.status_code == 409 and "already decided: approved" in response.json()["detail"]
    proposal.refresh_from_db()
    assert proposal.decision == "approve" and proposal.human_approver == member


@pytest.mark.parametrize(
    "mode, reviewed, message",
    [
        ("dual-sign-required", None, "reviewer has not approved"),
        ("dual-sign-required", False, "already decided: rejected"),
        ("mutating-with-confirm", True, "does not need a human"),
    ],
)
def test_only_a_proposal_waiting_for_a_human_can_be_signed(member, mode, reviewed, message):
    proposal = held(member, mode=mode, reviewed=reviewed)
    before = (proposal.decision, proposal.human_decision)

    response = post(member, proposal)

    assert response.status_code == 409 and message in response.json()["detail"]
    proposal.refresh_from_db()
    assert (proposal.decision, proposal.human_decision) == before


def test_a_timed_out_proposal_cannot_be_approved_afterwards(member):
    proposal = held(member)
    assert proposals.reject(proposal.pk, "no human approved it within 300s")

    response = post(member, proposal)

    assert response.status_code == 409
    proposal.refresh_from_db()
    assert proposal.decision == "reject" and proposal.human_approver is None


def test_the_card_buttons_get_the_redrawn_card(member):
    proposal = held(member)

    response = post(member, proposal, HTTP_HX_REQUEST="true")

    html = response.content.decode()
    assert response.status_code == 200 and f'id="proposal-{proposal.pk}"' in html
    assert "Approved" in html and "hx-post" not in html
    assert "On call confirmed &lt;b&gt;now&lt;/b&gt;" in html  # the model's text is escaped


def test_csrf_is_enforced_for_browser_sessions(member):
    proposal = held(member)
    client = Client(enforce_csrf_checks=True)
    client.force_login(member)

    response = client.post(reverse("proposal-approve", args=[proposal.pk]))

    assert response.status_code == 403
    proposal.refresh_from_db()
    assert proposal.awaiting_human


def test_the_chat_page_shows_the_waiting_card_with_its_buttons(member):
    proposal = held(member)
    chat = proposal.root_session

    html = client_for(member).get(reverse("chat-page", args=[chat.pk])).content.decode()

    assert f'id="proposal-{proposal.pk}"' in html and "Awaiting your approval" in html
    assert reverse("proposal-approve", args=[proposal.pk]) in html
    assert "single_device" in html and "incident:7" in html and "SOP: pass" in html


def test_proposals_are_read_only_in_the_admin(member, org_admin):
    proposal = held(member)
    client = client_for(org_admin)

    listing = client.get(reverse("admin:agents_app_mutatingproposal_changelist"))
    assert listing.status_code == 200 and "acknowledge_incident" in listing.content.decode()
    assert client.get(reverse("admin:agents_app_mutatingproposal_add")).status_code == 403
    change = client.post(
        reverse("admin:agents_app_mutatingproposal_change", args=[proposal.pk]), {"decision": "approve"}
    )
    assert change.status_code in (302, 403)
    proposal.refresh_from_db()
    assert proposal.awaiting_human


def test_the_admin_lists_only_the_own_tenants_proposals(member, outsider, other_org):
    held(member)
    admin = create_user("otto", "otto-pass-123", other_org, roles.ORG_ADMIN)
    listing = client_for(admin).get(reverse("admin:agents_app_mutatingproposal_changelist"))
    assert listing.status_code == 200 and "acknowledge_incident" not in listing.content.decode()
