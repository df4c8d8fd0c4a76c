"""The chat-app admin in headless Chromium (issue 29, findings 12 and 13): from the grouped admin
index an org admin adds a Slack app by choosing the platform first, sees only Slack's fields,
copies the absolute Request URL with the Copy button, and presses Test connection on the form,
which fills the bot identity."""

from __future__ import annotations

import re

import pytest
from django.db import connections

from fakes.slack_api import FakeSlack
from im_app.models import IMApp
from tests.support.browser import log_in, run_daphne, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WAIT_MS = 20_000
PUBLIC = "https://ongrid.example.com"


@pytest.fixture
def public_daphne(tmp_path) -> str:
    yield from run_daphne(tmp_path, ONGRID_LLM="offline", ONGRID_PUBLIC_URL=PUBLIC)


@pytest.fixture
def slack():
    fake = FakeSlack().start()
    yield fake
    fake.stop()


@pytest.fixture
def page(org_admin, public_daphne, browser, monkeypatch):
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # the test reads the database between clicks
    context = browser.new_context(
        viewport={"width": 1280, "height": 900}, permissions=["clipboard-read", "clipboard-write"]
    )
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    log_in(page, public_daphne, "oscar", "oscar-pass-123")
    yield page
    context.close()
    connections.close_all()


def test_a_slack_app_is_added_per_platform_its_url_copied_and_tested_on_the_form(
    page, public_daphne, slack, org
):
    page.goto(public_daphne + "/admin/")
    captions = page.locator("#content-main caption a").evaluate_all("links => links.map(a => a.textContent)")
    assert captions == [
        "Agents", "Estate", "Integrations", "Alerts", "Chat apps", "Schedules", "Audit", "Access"
    ]  # fmt: skip
    screenshot(page, "admin-index")
    page.locator("#content-main").get_by_role("link", name="IM apps").click()
    page.get_by_role("link", name="Add IM app").click()
    page.get_by_role("link", name="Slack", exact=True).click()
    page.wait_for_url("**/admin/im_app/imapp/add/?platform=slack")
    assert page.locator("#id_bot_token_0").is_visible() and page.locator("#id_app_token_0").is_visible()
    for foreign in ("encrypt_key", "webhook_secret", "app_secret", "verification_token"):
        assert page.locator(f"[name={foreign}]").count() == 0, foreign

    page.fill("#id_name", "Ops bot")
    page.fill("#id_api_base_url", slack.api_base)
    page.fill("#id_bot_token_0", slack.token)
    page.fill("#id_signing_secret_0", "a-signing-secret")
    page.locator("input[name=_continue]").click()
    page.wait_for_url(re.compile(r".*/admin/im_app/imapp/\d+/change/"))
    app = IMApp.objects.get(organization=org)
    assert app.platform == "slack"

    events = f"{PUBLIC}/im/slack/{app.pk}/events"
    box = page.locator(f"input[value='{events}']")
    assert box.is_visible()
    copy = page.locator(f"button[data-copy-from='{box.get_attribute('id')}']")
    copy.click()
    page.wait_for_function("button => button.textContent === 'Copied'", arg=copy.element_handle())
    assert page.evaluate("navigator.clipboard.readText()") == events

    page.get_by_role("button", name="Test connection").click()
    page.wait_for_selector(".messagelist .success")
    assert "connected as ongrid (bot BBOT) in Acme" in page.locator(".messagelist").inner_text()
    assert "ongrid (bot BBOT) in Acme" in page.locator(".field-bot_identity").inner_text()
    assert IMApp.objects.get(pk=app.pk).bot_identity == "ongrid (bot BBOT) in Acme"
    assert slack.token not in page.content()
    screenshot(page, "admin-im-app-slack")
