"""Incidents seen before, end to end: an investigation run by the runner with the fake model
finishes with a report; a later incident like it then shows it under "Similar past incidents"
(one search however many are found), its investigator's brief lists it as `seen_before`, and
`find_similar_incidents` returns it. Another organization sees none of it."""

from __future__ import annotations

import dataclasses

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from agents_app.llm.offline.planning import pick_tool_calls
from agents_app.toolsets.contract import ToolError
from agents_app.toolsets.registry import load_builtin_tools
from chat_app.signals import investigation_finished
from incidents_app import runner
from incidents_app.models import Investigation
from ops_app.models import Device, Incident, KnowledgeDocument
from tests.support.investigations import (
    INVESTIGATOR,
    answer,
    enable_auto,
    read_incident,
    report,
    submit,
    wait_finished,
)
from tests.support.procs import wait_until
from tests.support.tools import run_tool

pytestmark = pytest.mark.django_db(transaction=True)
ROOT_CAUSE = report({})["root_cause"]  # "db-01 stopped answering; checkout's queries time out."


@pytest.fixture
def investigated(settings, agents_llm, org) -> Incident:
    """A checkout incident the automatic trigger investigated to a report; automatic
    investigations are off again afterwards, so later incidents wait for the test."""
    enable_auto(settings)
    Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    agents_llm.add(
        INVESTIGATOR, read_incident(), submit(report({"kind": "device", "name": "db-01"})), answer()
    )
    incident = Incident.objects.create(
        organization=org, title="Checkout 5xx above 5%", severity="critical", started_at=timezone.now()
    )
    investigation = wait_finished(Investigation.objects.get(incident=incident).pk)
    assert investigation.status == "done", investigation.error
    settings.CONFIG = dataclasses.replace(settings.CONFIG, auto_investigate=False)
    wait_until(
        lambda: KnowledgeDocument.objects.filter(source_kind="past-incident", incident=incident).exists(),
        10,
        "the report to be kept as a past incident",
    )
    return incident


def later(org, title: str = "Checkout 5xx above 5% again") -> Incident:
    now = timezone.now()
    return Incident.objects.create(organization=org, title=title, severity="critical", started_at=now)


def remembered(org, title: str, root_cause: str) -> Incident:
    """Another past incident, its report announced as the runner announces one."""
    incident = later(org, title)
    investigation = Investigation.objects.create(
        organization=org, incident=incident, trigger="manual", status="done",
        report={**report({}), "root_cause": root_cause}, finished_at=timezone.now(),
    )  # fmt: skip
    investigation_finished.send(sender=Investigation, investigation=investigation)
    return incident


def page_of(client, incident: Incident) -> str:
    return client.get(reverse("incident-page", args=[incident.pk])).content.decode()


def test_a_later_incident_finds_the_finished_investigation_on_its_page_tool_and_brief(
    client, member, org, investigated
):
    again = later(org)
    client.force_login(member)

    page = page_of(client, again)
    assert "Similar past incidents" in page
    assert f'href="/incidents/{investigated.pk}/"' in page
    assert investigated.title in page and "db-01 stopped answering" in page

    found = run_tool("find_similar_incidents", org, incident_id=again.pk)
    assert found["incidents"][0]["incident_id"] == investigated.pk
    assert found["incidents"][0]["root_cause"] == ROOT_CAUSE
    assert found["incidents"][0]["url"] == f"/incidents/{investigated.pk}/"
    by_words = run_tool("find_similar_incidents", org, query="checkout 5xx", top_k=1)
    assert [i["incident_id"] for i in by_words["incidents"]] == [investigated.pk]

    brief = runner.brief(again)
    assert '"seen_before"' in brief and ROOT_CAUSE in brief
    assert f"/incidents/{investigated.pk}/" in brief
    # the past incident's own page does not list itself (the only past incident there is)
    assert 'id="similar-incidents"' not in page_of(client, investigated)


def test_the_page_shows_similar_incidents_with_one_search_however_many_there_are(
    client, member, org, investigated
):
    again = later(org)
    client.force_login(member)
    page_of(client, again)  # warm caches (sessions, translations)
    with CaptureQueriesContext(connection) as one:
        assert page_of(client, again).count('class="similar-incident"') == 1
    for n in range(3):
        remembered(org, f"Checkout 5xx above 5% ({n})", f"checkout pool exhausted, variant {n}")
    with CaptureQueriesContext(connection) as four:
        assert page_of(client, again).count('class="similar-incident"') == 4
    assert len(four.captured_queries) == len(one.captured_queries)


def test_another_organization_never_sees_the_past_incident(client, outsider, other_org, org, investigated):
    theirs = later(other_org)
    client.force_login(outsider)
    page = page_of(client, theirs)
    assert 'id="similar-incidents"' not in page
    assert f'href="/incidents/{investigated.pk}/"' not in page and "db-01 stopped answering" not in page
    assert run_tool("find_similar_incidents", other_org, query="checkout 5xx db-01")["incidents"] == []
    with pytest.raises(ToolError, match="no incident"):
        run_tool("find_similar_incidents", other_org, incident_id=investigated.pk)
    brief = runner.brief(theirs)
    assert "seen_before" not in brief


def test_the_tools_arguments_are_checked_with_a_clear_error(org):
    for arguments, problem in (
        ({}, "give a query, an incident_id, or both"),
        ({"query": "   "}, "give a query"),
        ({"query": "checkout", "top_k": 0}, "top_k must be an integer from 1 to 10"),
        ({"query": "checkout", "top_k": 11}, "top_k must be an integer from 1 to 10"),
        ({"incident_id": "7"}, "incident_id must be an integer"),
        ({"query": 42}, "query must be text"),
        ({"query": "what is it?"}, "no searchable words"),
        ({"incident_id": 999999}, "no incident 999999"),
    ):
        with pytest.raises(ToolError, match=problem):
            run_tool("find_similar_incidents", org, **arguments)
    assert run_tool("find_similar_incidents", org, query="checkout 5xx")["incidents"] == []


def test_the_offline_model_never_picks_it_from_a_briefs_words():
    tool = load_builtin_tools()["find_similar_incidents"]
    schema = {"function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}}
    assert tool.tool_class == "read"
    assert pick_tool_calls("find similar past incidents of checkout and what fixed it", [schema]) == []
