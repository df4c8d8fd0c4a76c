"""The generic source's live preview in headless Chromium: editing the mapping redraws what it
yields from the last delivery, before anything is saved, without a CSP violation."""

from __future__ import annotations

import pytest
from django.db import connections
from django.urls import reverse

from ops_app.models import AlertSource
from tests.alerts.conftest import MAPPING
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
LAST = {"id": "uptime-check-42", "state": "open", "level": "sev1", "alert": {"name": "checkout is down"}}
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolations.push(e.violatedDirective + " blocked " + e.blockedURI);
});
"""


def test_editing_the_mapping_redraws_the_preview(org, org_admin, daphne_server, browser, monkeypatch):
    from playwright.sync_api import expect

    # The test reads the database under Playwright's own event loop (as tests/web's browser tests).
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    source = AlertSource.objects.create(
        organization=org, name="uptime", kind="generic", auth_token="tok", mapping=MAPPING, last_payload=LAST
    )
    context = browser.new_context()
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    page.set_default_timeout(20_000)
    log_in(page, daphne_server, "oscar", "oscar-pass-123")
    page.goto(daphne_server + reverse("admin:ops_app_alertsource_change", args=[source.pk]))
    preview = page.locator("#mapping-preview")
    assert "checkout is down" in preview.inner_text()
    page.fill("#id_mapping", '{"title": "id", "group_key": "state", "labels": "nowhere"}')
    expect(preview).to_contain_text("labels: nowhere")  # redrawn by htmx, as typed
    text = preview.inner_text()
    assert "uptime-check-42" in text and "checkout is down" not in text
    assert AlertSource.objects.get(pk=source.pk).mapping == MAPPING  # nothing saved
    assert page.evaluate("window.__cspViolations") == []
    context.close()
    connections.close_all()  # the connections opened under Playwright's loop
