"""The incident page in headless Chromium against a real daphne: "Investigate again" that ends
inconclusive leaves the good report on the page, with a notice above it saying so, drawn live and
still there after a reload (issue 29, finding 1)."""

from __future__ import annotations

import datetime as dt

import pytest

from incidents_app.models import Investigation
from ops_app.models import Device, Incident
from tests.support.browser import log_in, screenshot
from tests.support.investigations import INVESTIGATOR, answer, read_incident, report

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WAIT_MS = 20_000


@pytest.fixture
def page(org, member, daphne_server, browser, monkeypatch):
    """Signed in as a member; the daphne under test investigates only when asked."""
    from django.db import connections

    monkeypatch.setenv("ONGRID_AUTO_INVESTIGATE", "0")
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    log_in(page, daphne_server, "alice", "alice-pass-123")
    yield page
    context.close()
    connections.close_all()


def test_an_inconclusive_rerun_keeps_the_report_live_and_after_a_reload(
    page, org, member, daphne_server, agents_llm
):
    Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    incident = Incident.objects.create(
        organization=org, title="Checkout 5xx", severity="critical", started_at=dt.datetime.now(dt.UTC)
    )
    good = Investigation.objects.create(
        organization=org, incident=incident, trigger="manual", requested_by=member, status="done",
        report=report({"kind": "device", "name": "db-01"}), finished_at=dt.datetime.now(dt.UTC),
    )  # fmt: skip
    agents_llm.add(INVESTIGATOR, read_incident(), answer("Nothing conclusive this time."))

    page.goto(f"{daphne_server}/incidents/{incident.pk}/")
    page.wait_for_selector("#investigation[data-state='done'] .summary")
    page.click("button:has-text('Investigate again')")
    page.wait_for_selector("#investigation[data-state='inconclusive'] .run-notice")

    screenshot(page, "incident-kept-report")
    for reloaded in (False, True):
        notice = page.inner_text("#investigation .run-notice")
        assert "ended without a new report; the report below is kept." in notice, reloaded
        assert "The investigator ended without a valid report." in notice
        summary = page.inner_text("#investigation .summary")
        assert summary == "Checkout fails because its database host is down."
        assert f"Report of investigation #{good.pk}" in page.inner_text("#investigation .kept-from")
        verdicts = page.eval_on_selector_all(
            "#investigation-history tr.run", "rows => rows.map(r => r.dataset.verdict)"
        )
        assert verdicts == ["inconclusive", "report"]
        page.reload()
        page.wait_for_selector("#investigation[data-state='inconclusive'] .run-notice")
