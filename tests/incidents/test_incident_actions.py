"""The incident page's changes go through the review gate with one click: Acknowledge / Resolve
send the agents' own `acknowledge_incident` / `resolve_incident`, and a report's proposed next
action is sent exactly as the investigator wrote it. The person stays on the incident page, which
shows the progress and the outcome (with the reason when refused); no chat opens or joins their
list, and the timeline credits the person and names the gate's verdict."""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import time

import pytest
from django.urls import reverse

from agents_app.models import MutatingProposal, RequestedCall
from agents_app.runtime.turns import last_answer
from audit_app.models import AuditLog
from chat_app.models import ChatSession, SessionStatus
from fakes.openai_server import text
from incidents_app import investigations
from incidents_app.fragments import live_fragments, viewer_of
from incidents_app.models import IncidentAction, Investigation, InvestigationPolicy
from ops_app.models import ChangeEvent, Incident
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.gate import make_user_agent
from tests.support.investigations import wait_finished

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("inline_executor")]
T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def offline(settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, llm="offline", openai_api_key="")


@pytest.fixture
def incident(org):
    return Incident.objects.create(organization=org, title="Checkout 5xx", severity="critical", started_at=T0)


def chat_of(response) -> ChatSession:
    """The gate's hidden session behind the newest pressed change; the press came back to the page."""
    assert response.status_code == 302 and response.url.startswith("/incidents/"), response
    return IncidentAction.objects.order_by("-pk").first().session


def sidebar(client) -> list[str]:
    """The titles of the chats the person's sidebar and chat list show."""
    return [s["title"] for s in client.get("/api/sessions/").json()["results"]]


def turn_done(chat: ChatSession, seconds: float = 30.0) -> ChatSession:
    """Poll the row the chat page also watches until the turn has ended."""
    deadline = time.monotonic() + seconds
    while True:
        chat.refresh_from_db()
        if chat.status != SessionStatus.RUNNING:
            return chat
        assert time.monotonic() < deadline, "the one-click turn did not end"
        time.sleep(0.05)


def with_report(org, incident, next_actions: list[dict]) -> Investigation:
    report = {"summary": "Pool exhausted", "root_cause": "A leak", "next_actions": next_actions}
    return Investigation.objects.create(
        organization=org, incident=incident, trigger="manual", status="done", report=report
    )


def test_acknowledge_and_resolve_pass_the_gate_and_are_recorded_on_the_timeline(
    client, incident, member, offline
):
    client.force_login(member)
    pressed = client.post(reverse("incident-acknowledge", args=[incident.pk]), {"note": "on it"})
    acked = turn_done(chat_of(pressed))
    resolved = turn_done(chat_of(client.post(reverse("incident-resolve", args=[incident.pk]))))

    incident.refresh_from_db()
    assert incident.status == "resolved" and incident.acknowledged_at and incident.resolved_at
    proposals = MutatingProposal.objects.order_by("created_at")
    assert [(p.tool, p.decision, p.persona) for p in proposals] == [
        ("acknowledge_incident", "approve", "specialist-ops"),
        ("resolve_incident", "approve", "specialist-ops"),
    ]
    assert all(p.reviewer_session_id and p.executed_at for p in proposals)
    assert proposals[0].payload["operator"] == "alice (one click; run as agent specialist-ops)"
    assert "offline stand-in" in proposals[0].decision_reason
    events = ChangeEvent.objects.filter(resource_type="incident", resource_id=str(incident.pk))
    assert [(e.actor_id, e.after["status"]) for e in events.order_by("occurred_at")] == [
        (member.pk, "acknowledged"),
        (member.pk, "resolved"),
    ]
    assert last_answer(acked.pk).content.startswith("Done: `acknowledge_incident` ran.")
    assert resolved.user_id == member.pk and resolved.status == SessionStatus.IDLE
    assert sidebar(client) == []  # the gate's sessions are not chats of alice
    assert client.get("/chat/").url == "/chat/new/"
    assert {c.kind for c in (acked, resolved)} == {"action"}  # but they exist, in the audit
    assert AuditLog.objects.filter(session__parent_session__in=[acked, resolved], status="ok").count() == 2
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert "acknowledged by alice · approved by the reviewer" in page
    assert '<span class="acknowledged-by">acknowledged by alice</span>' in page  # the header too
    assert "resolved by alice · approved by the reviewer" in page
    assert "agent specialist-ops acknowledged" not in page  # the person is credited, not the agent
    assert page.count('data-state="done"') == 2
    assert f'action="/incidents/{incident.pk}/resolve/"' not in page  # no Resolve once resolved


def test_resolving_from_the_page_stops_a_waiting_investigation(client, org, incident, member, offline):
    InvestigationPolicy.objects.create(organization=org, max_concurrent=0)  # it stays queued
    queued = investigations.request(incident, member)
    client.force_login(member)
    turn_done(chat_of(client.post(reverse("incident-resolve", args=[incident.pk]))))
    queued.refresh_from_db()
    assert queued.status == Investigation.Status.STOPPED
    assert "resolved" in queued.error


def test_a_reports_proposed_change_is_sent_as_written_and_the_reviewer_decides(
    client, org, incident, member, agents_llm
):
    agents_llm.add("reviewer", text("Decision: reject\nThe incident is still being worked on."))
    ack = {"tool": "acknowledge_incident", "arguments": {"incident_id": incident.pk, "reason": "pool fixed"}}
    actions = [{"action": "Look at the pool"}, {"action": "Acknowledge it", "proposed_write": ack}]
    with_report(org, incident, actions)
    client.force_login(member)

    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert page.count("Send through the review gate") == 1  # only the action with a proposed write
    chat = turn_done(chat_of(client.post(reverse("incident-send-action", args=[incident.pk, 1]))))

    proposal = MutatingProposal.objects.get()
    assert proposal.tool == "acknowledge_incident"
    assert proposal.arguments == {"incident_id": incident.pk, "reason": "pool fixed"}
    assert proposal.decision == "reject" and proposal.executed_at is None
    incident.refresh_from_db()
    assert incident.status == "firing"  # the reviewer said no, so nothing changed
    answer = last_answer(chat.pk).content
    assert answer.startswith("Not done: `acknowledge_incident` did not run.")
    assert "still being worked on" in answer
    call = AuditLog.objects.get(tool="acknowledge_incident")
    assert call.status == "rejected" and call.persona == "specialist-ops"
    assert call.session.parent_session_id == chat.pk  # the worker hangs under the chat in the tree
    assert agents_llm.seen.get("default") is None  # no coordinator model chose anything
    tree = client.get(f"/api/sessions/{chat.pk}/tree/").json()
    (worker,) = tree["children"]
    assert worker["persona"] == "specialist-ops" and worker["status"] == "failed"
    assert [p["decision"] for p in worker["proposals"]] == ["reject"]
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert 'data-state="rejected"' in page and "still being worked on" in page  # the reason, on the page
    assert "Acknowledge it by alice · rejected" in page  # and on the timeline
    assert sidebar(client) == []


def test_the_offline_reviewer_refuses_a_change_to_a_system(client, org, incident, member, offline):
    arguments = {"device": "web-01", "service": "nginx", "reason": "nginx workers are stuck"}
    restart = {"tool": "host_restart_service", "arguments": arguments}
    with_report(org, incident, [{"action": "Restart nginx", "proposed_write": restart}])
    client.force_login(member)
    chat = turn_done(chat_of(client.post(reverse("incident-send-action", args=[incident.pk, 0]))))
    proposal = MutatingProposal.objects.get()
    assert proposal.decision == "reject" and "set OPENAI_API_KEY" in proposal.decision_reason
    assert last_answer(chat.pk).content.startswith("Not done: `host_restart_service` did not run.")
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert 'data-state="rejected"' in page and "set OPENAI_API_KEY" in page


def test_what_cannot_be_sent_is_refused_before_any_chat_opens(client, org, incident, member, offline):
    read = {"tool": "query_devices", "arguments": {}}
    with_report(org, incident, [{"action": "List devices", "proposed_write": read}, {"action": "Think"}])
    client.force_login(member)

    refused = client.post(reverse("incident-send-action", args=[incident.pk, 0]), follow=True)
    assert "query_devices changes nothing" in refused.content.decode()
    send_first = reverse("incident-send-action", args=[incident.pk, 0])
    from_the_live_block = client.post(send_first, HTTP_HX_REQUEST="true")
    assert from_the_live_block.headers["HX-Redirect"] == f"/incidents/{incident.pk}/"  # htmx follows it
    assert client.post(reverse("incident-send-action", args=[incident.pk, 1])).status_code == 404
    assert client.post(reverse("incident-send-action", args=[incident.pk, 7])).status_code == 404
    assert not ChatSession.objects.exists() and not RequestedCall.objects.exists()


def test_an_auditor_cannot_send_and_another_organization_gets_404(client, org, incident, auditor, other_org):
    ack = {"tool": "acknowledge_incident", "arguments": {"incident_id": incident.pk, "reason": "on it now"}}
    with_report(org, incident, [{"action": "Acknowledge", "proposed_write": ack}])
    client.force_login(auditor)
    assert client.post(reverse("incident-acknowledge", args=[incident.pk])).status_code == 403
    assert client.post(reverse("incident-send-action", args=[incident.pk, 0])).status_code == 403
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert "Send through the review gate" not in page

    client.force_login(create_user("gina", "gina-pass-123", other_org, roles.MEMBER))
    assert client.post(reverse("incident-send-action", args=[incident.pk, 0])).status_code == 404
    assert client.post(reverse("incident-resolve", args=[incident.pk])).status_code == 404
    incident.refresh_from_db()
    assert incident.status == "firing" and not ChatSession.objects.exists()


def test_a_dual_sign_change_is_signed_on_the_incident_page(client, org, incident, member, offline):
    """The gate's session is no chat of alice's, so the card she must sign is on the page."""
    make_user_agent(org, "a-careful-ops", "dual-sign-required", ["acknowledge_incident"])
    client.force_login(member)
    chat = chat_of(client.post(reverse("incident-acknowledge", args=[incident.pk])))
    pressed = IncidentAction.objects.get()
    sign_url = reverse("incident-sign-action", args=[incident.pk, pressed.pk])
    deadline = time.monotonic() + 30
    while sign_url not in (page := client.get(reverse("incident-page", args=[incident.pk])).content.decode()):
        assert time.monotonic() < deadline, "the page never asked for the signature"
        time.sleep(0.05)
    assert "waiting for a person to approve" in page
    assert client.post(sign_url, {"approve": "1"}, HTTP_HX_REQUEST="true").status_code == 204
    turn_done(chat)
    incident.refresh_from_db()
    assert incident.status == "acknowledged"
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert "acknowledged by alice · approved by the reviewer and alice" in page
    assert client.post(sign_url, {"approve": "1"}).status_code == 404  # nothing waits any more


def test_the_buttons_redrawn_over_the_socket_still_post(client, incident, member, offline):
    """A socket redraw has no request, so no CSRF field: each button must post through htmx,
    which sends the page's token, or pressing it after a redraw would be refused."""
    redrawn = live_fragments(incident.pk, viewer_of(member))
    forms = re.findall(r"<form [^>]*>", redrawn.split('id="actions"', 1)[1])
    assert len(forms) == 4 and all("hx-post=" in form for form in forms), forms
    client.force_login(member)
    investigate = client.post(reverse("incident-investigate", args=[incident.pk]), HTTP_HX_REQUEST="true")
    assert investigate.status_code == 204
    wait_finished(Investigation.objects.get(incident=incident).pk)  # not left running into teardown
    asked = client.post(reverse("incident-ask", args=[incident.pk]), HTTP_HX_REQUEST="true")
    assert asked.headers["HX-Redirect"].startswith("/chat/")
