"""Acknowledge on the incident page in headless Chromium against a real daphne: the change is
drawn pending while the reviewer thinks, then done, in place (no reload, no chat), and the
timeline credits the person who pressed it with the gate's verdict."""

from __future__ import annotations

import datetime as dt
import threading

import pytest

from fakes.openai_server import text
from ops_app.models import Incident
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WAIT_MS = 20_000
T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def page(member, daphne_server, browser, monkeypatch):
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


def test_acknowledge_shows_pending_then_done_in_place_credited_to_the_person(
    page, org, daphne_server, agents_llm
):
    incident = Incident.objects.create(
        organization=org, title="Checkout 5xx", severity="critical", started_at=T0
    )
    release = threading.Event()

    def reviewer(request):
        release.wait(timeout=30)
        return text("Decision: approve\nSomeone is on it; acknowledging changes nothing else.")

    agents_llm.add("reviewer", reviewer)
    page.goto(f"{daphne_server}/incidents/{incident.pk}/")
    page.wait_for_selector("#incident-state:has-text('Firing')")
    page.evaluate("window.stayedOnThePage = true")
    try:
        page.click("#actions button.acknowledge")
        page.wait_for_selector(
            "#actions .pressed-change[data-state='pending']:has-text('acknowledged by alice')"
        )
        release.set()
        page.wait_for_selector("#actions .pressed-change[data-state='done']")
    finally:
        release.set()
    page.wait_for_selector("#incident-state:has-text('Acknowledged')")
    assert page.evaluate("window.stayedOnThePage") is True  # updated in place, no reload
    assert page.url.endswith(f"/incidents/{incident.pk}/")
    assert "acknowledged by alice · approved by the reviewer" in page.inner_text("#timeline")
    assert page.locator("#actions button.acknowledge").count() == 0  # nothing left to acknowledge
