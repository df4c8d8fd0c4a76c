"""Accessible colours, one heading per page, and layouts an on-call engineer can use on a phone
and a laptop (issue 29, findings 11 and 16), in headless Chromium against a real daphne.

axe-core is vendored (tests/support/vendor/axe-*.min.js, MPL-2.0 licence beside it) so that CI
needs no npm step: it is injected into each page and run with its WCAG 2 A/AA rules."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from chat_app.models import MessageRole
from ops_app.models import Incident
from tests.support import audit_rows
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WAIT_MS = 20_000
AXE = next((Path(__file__).parents[1] / "support" / "vendor").glob("axe-*.min.js"))
AXE_OPTIONS = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}}
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}


@pytest.fixture
def ui(org_admin, offline_daphne_server, browser, monkeypatch):
    """The browser, against a daphne without an LLM (so with the offline banner, as in the demo);
    this test's own ORM calls are allowed while Playwright's loop is up."""
    from django.db import connections

    monkeypatch.setenv("ONGRID_AUTO_INVESTIGATE", "0")
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    yield browser
    connections.close_all()


def open_page(browser, base: str, *, log_in_first: bool = True, **options):
    # bypass_csp: the page's CSP (rightly) refuses the injected axe script
    options = {"bypass_csp": True, "viewport": {"width": 1200, "height": 800}, **options}
    context = browser.new_context(**options)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    if log_in_first:
        log_in(page, base, "oscar", "oscar-pass-123")
    return context, page


def a_chat_with_an_answer(org, user):
    chat = audit_rows.session(org, user, title="Disk on web-01")
    audit_rows.message(chat, MessageRole.USER, "what fills /var on web-01?")
    audit_rows.message(chat, MessageRole.ASSISTANT, "Rotated logs fill **/var** on web-01.")
    return chat


def axe_problems(page) -> list[str]:
    """The contrast violations and every serious or critical one, as readable lines."""
    page.add_script_tag(path=str(AXE))
    results = page.evaluate("options => axe.run(document, options)", AXE_OPTIONS)
    return [
        f"{v['id']} ({v['impact']}): {[n['target'] for n in v['nodes']][:5]}"
        for v in results["violations"]
        if v["id"] == "color-contrast" or v["impact"] in {"serious", "critical"}
    ]


def assert_clean(page, what: str) -> None:
    page.wait_for_load_state("networkidle")
    assert page.locator("h1").count() == 1, f"{what}: one h1"
    assert axe_problems(page) == [], what


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_login_chat_incident_and_audit_pages_pass_axe(org, org_admin, offline_daphne_server, ui, scheme):
    chat = a_chat_with_an_answer(org, org_admin)
    incident = Incident.objects.create(
        organization=org, title="Checkout 5xx", severity="critical", started_at=dt.datetime.now(dt.UTC)
    )
    context, page = open_page(ui, offline_daphne_server, log_in_first=False, color_scheme=scheme)
    try:
        page.goto(offline_daphne_server + "/accounts/login/")
        assert_clean(page, f"login ({scheme})")
        log_in(page, offline_daphne_server, "oscar", "oscar-pass-123")
        page.goto(f"{offline_daphne_server}/chat/{chat.pk}/")
        page.wait_for_selector(".bubble.user")
        assert_clean(page, f"chat ({scheme})")
        page.goto(f"{offline_daphne_server}/incidents/{incident.pk}/")
        page.wait_for_selector("button:has-text('Investigate again')")
        assert_clean(page, f"incident ({scheme})")
        page.goto(f"{offline_daphne_server}/audit/")
        page.wait_for_selector(".session-row")
        assert_clean(page, f"audit ({scheme})")
    finally:
        context.close()


def test_on_a_phone_the_chat_fills_the_screen_and_the_audit_list_is_dense(
    org, org_admin, offline_daphne_server, ui
):
    chat = a_chat_with_an_answer(org, org_admin)
    for number in range(15):
        audit_rows.session(
            org, org_admin, title=f"Checking disk pressure on web-{number:02d} after the deploy"
        )
    context, page = open_page(ui, offline_daphne_server, viewport=PHONE, is_mobile=True, has_touch=True)
    try:
        page.goto(f"{offline_daphne_server}/chat/{chat.pk}/")
        page.wait_for_selector(".bubble.user")
        top = page.evaluate("document.getElementById('transcript').getBoundingClientRect().top")
        send = page.locator("#send").bounding_box()
        assert send["y"] + send["height"] <= PHONE["height"], "the composer is in view"
        share = (PHONE["height"] - top) / PHONE["height"]
        assert share >= 0.7, f"messages + composer take {share:.0%} of the screen"

        page.goto(f"{offline_daphne_server}/audit/")
        assert page.locator(".session-row").count() == 16, page.inner_text("main")
        assert page.locator(".session-row").count() == 16
        height = page.evaluate("document.documentElement.scrollHeight")
        assert height < 3 * PHONE["height"], f"the audit list is {height}px tall"
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], "the table scrolls inside itself, not the page"
    finally:
        context.close()


def test_at_1440_by_900_send_is_fully_in_view_and_other_pages_have_one_heading(
    org, org_admin, offline_daphne_server, ui
):
    chat = a_chat_with_an_answer(org, org_admin)
    context, page = open_page(ui, offline_daphne_server, viewport=DESKTOP)
    try:
        for url in (f"{offline_daphne_server}/chat/{chat.pk}/", f"{offline_daphne_server}/chat/"):
            page.goto(url)
            box = page.locator("#send").bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= DESKTOP["height"] - 4, (url, box)
            assert page.evaluate("document.documentElement.scrollHeight") <= DESKTOP["height"], url
        for path in ("/", "/incidents/", "/reports/", "/preferences/"):
            page.goto(offline_daphne_server + path)
            assert page.locator("h1").count() == 1, path
    finally:
        context.close()
