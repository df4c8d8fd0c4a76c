"""The incident page in headless Chromium against a real daphne: an investigation started from the
page is drawn live (queued/running → its steps → the report) without a reload, and an evidence
link opens the audit page of the exact tool call."""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from audit_app.models import AuditLog
from incidents_app.models import Investigation
from ops_app.models import Device, Incident
from tests.support.browser import log_in, screenshot
from tests.support.investigations import INVESTIGATOR, answer, read_incident, report, submit

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WAIT_MS = 20_000
T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def manual_only(monkeypatch):
    """The daphne under test starts investigations only when asked (no startup backfill race)."""
    monkeypatch.setenv("ONGRID_AUTO_INVESTIGATE", "0")


@pytest.fixture
def page(manual_only, org_admin, daphne_server, browser, monkeypatch):
    """Signed in as an org admin (who may also open the audit pages). The test's own ORM calls
    are allowed under Playwright's loop; daphne was started before, without that setting."""
    from django.db import connections

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    log_in(page, daphne_server, "oscar", "oscar-pass-123")
    yield page
    context.close()
    connections.close_all()  # the connections opened under Playwright's loop


def holding(step, release: threading.Event):
    """A scripted reply that waits for the test's go before the model answers."""

    def reply(request):
        release.wait(timeout=30)
        return step(request) if callable(step) else step

    return reply


def test_the_page_follows_the_investigation_live_and_evidence_opens_the_tool_call(
    page, org, daphne_server, agents_llm
):
    Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    incident = Incident.objects.create(
        organization=org, title="Checkout 5xx", severity="critical", started_at=T0
    )
    first, second = threading.Event(), threading.Event()
    agents_llm.add(
        INVESTIGATOR,
        holding(read_incident(), first),
        holding(submit(report({"kind": "device", "name": "db-01"})), second),
        answer(),
    )
    page.goto(f"{daphne_server}/incidents/{incident.pk}/")
    page.wait_for_selector("#investigation:has-text('Not investigated yet.')")
    try:
        page.click("button:has-text('Investigate again')")
        page.wait_for_selector("#investigation .live")  # the socket redrew the running block
        page.evaluate("window.stayedOnThePage = true")
        first.set()
        page.wait_for_selector("#investigation li:has-text('get_incident_detail')")  # a step, live
        screenshot(page, "incident-running")
        second.set()
        page.wait_for_selector("#investigation[data-state='done']")
    finally:
        first.set()
        second.set()
    assert page.evaluate("window.stayedOnThePage") is True  # updated in place, no reload
    assert "Checkout fails because its database host is down." in page.inner_text("#investigation .summary")
    screenshot(page, "incident-done")

    investigation = Investigation.objects.get(incident=incident)
    call = AuditLog.objects.get(session_id=investigation.session_id, tool_call_id="c1")
    page.click("#investigation .evidence a")
    page.wait_for_url(f"**/audit/calls/{call.pk}/")
    assert "get_incident_detail" in page.inner_text("h1")
    assert "c1" in page.inner_text("dl.totals")
