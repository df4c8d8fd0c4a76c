"""Inspections: a read-only persona's finding, an incident for a problem, once per problem."""

from __future__ import annotations

import pytest
from django.urls import reverse

from chat_app.models import ChatSession, SessionKind
from fakes.openai_server import call, text, tool_calls
from incidents_app.models import Investigation, InvestigationPolicy
from ops_app.models import Incident
from schedules_app import runner, scheduler
from schedules_app.models import ScheduleRun
from tests.support.investigations import INVESTIGATOR, enable_auto, wait_finished
from tests.support.schedules import make_schedule

pytestmark = pytest.mark.django_db(transaction=True)

PROBLEM = {
    "status": "problem",
    "summary": "db-01 /var is nearly full.",
    "findings": [
        {"title": "/var over 85 %", "severity": "problem", "target": "db-01", "evidence": "91% used"},
        {"title": "/ fine", "severity": "ok", "target": "db-01", "evidence": "40% used"},
    ],
}


def script_finding(agents_llm, finding: dict) -> None:
    agents_llm.add("specialist-disk", tool_calls(call("submit_finding", finding)), text("Reported."))


def run_once(schedule) -> ScheduleRun:
    run = scheduler.create_manual_run(schedule)
    runner.execute_run(run.pk)
    return ScheduleRun.objects.get(pk=run.pk)


def test_a_problem_opens_one_incident_and_the_same_problem_again_does_not(org, agents_llm):
    schedule = make_schedule(org)
    script_finding(agents_llm, PROBLEM)
    first = run_once(schedule)
    # Next time the figure moved (92 %) but it is the same problem on the same target.
    again = {**PROBLEM, "findings": [{**PROBLEM["findings"][0], "evidence": "92% used"}]}
    script_finding(agents_llm, again)
    second = run_once(schedule)

    assert (first.finding, first.incident_opened) == ("problem", True)
    incident = first.incident
    assert incident.source == Incident.Source.MANUAL and incident.status == Incident.Status.FIRING
    assert "db-01 /var is nearly full." in incident.title
    assert (second.finding, second.incident_id, second.incident_opened) == ("problem", incident.pk, False)
    assert Incident.objects.filter(organization=org).count() == 1


def test_once_the_incident_is_resolved_the_problem_opens_a_new_one(org, agents_llm):
    schedule = make_schedule(org)
    script_finding(agents_llm, PROBLEM)
    first = run_once(schedule)
    Incident.objects.filter(pk=first.incident_id).update(status=Incident.Status.RESOLVED)
    script_finding(agents_llm, PROBLEM)
    second = run_once(schedule)
    assert second.incident_opened and second.incident_id != first.incident_id


def test_ok_and_warning_open_no_incident_and_the_run_is_a_work_session_of_the_persona(org, agents_llm):
    schedule = make_schedule(org)
    script_finding(agents_llm, {"status": "warning", "summary": "db-02 at 80 %.", "findings": []})
    run = run_once(schedule)
    assert (run.finding, run.incident_id) == ("warning", None)
    session = ChatSession.objects.get(pk=run.session_id)
    assert (session.kind, session.agent_id, session.user_id) == (SessionKind.WORK, "specialist-disk", None)
    assert session.status == "completed"
    # The agent was asked the schedule's prompt and given submit_finding, and no write tool.
    request = agents_llm.seen["specialist-disk"][0]
    asked = [m["content"] for m in request.messages if m.get("role") == "user"]
    assert any("flag anything over 85 %" in content for content in asked)
    assert "submit_finding" in request.tool_names and "host_restart_service" not in request.tool_names
    assert Incident.objects.count() == 0


def test_a_schedule_with_a_persona_that_can_write_is_refused(org, agents_llm):
    schedule = make_schedule(org, persona="default")
    run = run_once(schedule)
    assert run.state == "failed" and "read-only" in run.error
    assert agents_llm.seen == {}


def test_members_and_auditors_see_the_run_and_another_organization_does_not(
    client, org, member, auditor, outsider, agents_llm
):
    schedule = make_schedule(org)
    script_finding(agents_llm, PROBLEM)
    run = run_once(schedule)
    url = reverse("schedule-run", args=[run.pk])
    for user in (member, auditor):
        client.force_login(user)
        page = client.get(url)
        assert page.status_code == 200 and "db-01 /var is nearly full." in page.content.decode()
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    assert "disk check" not in client.get(reverse("reports")).content.decode()


def test_a_problems_incident_is_investigated_through_the_investigations_policy(org, agents_llm, settings):
    enable_auto(settings)
    agents_llm.add(INVESTIGATOR, text("Nothing conclusive: /var/log grows, no cause found."))
    schedule = make_schedule(org)
    script_finding(agents_llm, PROBLEM)
    first = run_once(schedule)

    # The incident the problem opened is picked up like any other: manual source, severity from the
    # finding (a problem is critical, over the default policy's `high` threshold).
    incident = first.incident
    assert (incident.source, incident.severity) == ("manual", "critical")
    investigation = wait_finished(Investigation.objects.get(incident=incident).pk)
    assert investigation.trigger == Investigation.Trigger.MANUAL
    assert investigation.status == "inconclusive"
    assert f"incident #{incident.pk}" in agents_llm.seen[INVESTIGATOR][0].messages[1]["content"]

    # The same problem again links to the open incident: no second incident, no second investigation.
    script_finding(agents_llm, PROBLEM)
    second = run_once(schedule)
    assert (second.incident_id, second.incident_opened) == (incident.pk, False)
    assert Investigation.objects.filter(incident__organization=org).count() == 1


def test_a_policy_that_is_off_leaves_the_problems_incident_to_a_human(org, agents_llm, settings):
    enable_auto(settings)
    InvestigationPolicy.objects.create(organization=org, enabled=False)
    schedule = make_schedule(org)
    script_finding(agents_llm, PROBLEM)
    run = run_once(schedule)
    assert run.incident_opened
    assert not Investigation.objects.filter(incident=run.incident_id).exists()


def test_an_inspection_mail_to_a_spanish_user_is_in_spanish(org, agents_llm, member, settings):
    from django.core import mail

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    type(member).objects.filter(pk=member.pk).update(email="alice@example.com")
    member.membership.language = "es"
    member.membership.save(update_fields=["language"])
    schedule = make_schedule(org, email_to="alice@example.com, ops@example.com")
    script_finding(agents_llm, PROBLEM)
    run = run_once(schedule)

    by_recipient = {tuple(sent.to): sent for sent in mail.outbox}
    spanish, english = by_recipient[("alice@example.com",)], by_recipient[("ops@example.com",)]
    assert spanish.subject == f"[Ongrid] {schedule.name}: PROBLEMA"
    assert spanish.body.startswith("Estado: Problema\ndb-01 /var is nearly full.")
    assert spanish.body.endswith(f"Incidente #{run.incident_id}")
    assert english.subject == f"[Ongrid] {schedule.name}: PROBLEM"
    assert english.body.startswith("Status: Problem\n")
    assert english.body.endswith(f"Incident #{run.incident_id}")
