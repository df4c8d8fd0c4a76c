"""The Content-Security-Policy in headless Chromium: the login page, the chat (websocket, a streamed
answer), the audit pages and the admin load without a single violation, and the chat's delete
confirmation (once an inline onsubmit) still asks first."""

from __future__ import annotations

import pytest

from fakes.openai_server import text
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WAIT_MS = 20_000

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__cspViolations.push(
    e.violatedDirective + " blocked " + e.blockedURI + " at " + e.sourceFile + ":" + e.lineNumber);
});
"""


@pytest.fixture
def oscar(org_admin):
    """An organization admin who is also a superuser: chats, audits, sees every admin page."""
    org_admin.is_superuser = True
    org_admin.save()
    return org_admin


@pytest.fixture
def page(oscar, daphne_server, browser):
    """A tab of oscar's, recording every CSP report."""
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.console_messages_seen = []
    page.on("console", lambda message: page.console_messages_seen.append(message.text))
    yield page
    context.close()


def violations(page) -> list[str]:
    recorded = page.evaluate("window.__cspViolations || []")
    console = [text for text in page.console_messages_seen if "Content Security Policy" in text]
    return recorded + console


def visit(page, url: str) -> None:
    response = page.goto(url)
    assert response.status == 200, url
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_load_state("networkidle")
    assert violations(page) == [], url


def test_pages_load_and_the_chat_works_without_a_csp_violation(page, daphne_server, agents_llm, oscar):
    base = daphne_server
    page.goto(base + "/accounts/login/")
    assert violations(page) == []
    log_in(page, base, "oscar", "oscar-pass-123")
    page.wait_for_selector(".connection:empty", state="attached")  # the websocket is up
    agents_llm.add("default", text("All **green** on `web-01`.", chunk_size=4, chunk_delay=0.02))
    page.fill("#message", "status of web-01?")
    page.press("#message", "Enter")
    assert page.wait_for_selector(".bubble.answer strong").inner_text() == "green"
    assert violations(page) == []

    chat_id = int(page.url.rstrip("/").rsplit("/", 1)[-1])  # the page is /chat/<id>/
    for path in (
        "/audit/",
        f"/audit/sessions/{chat_id}/",
        f"/audit/sessions/{chat_id}/print/",
        "/admin/",
        "/admin/agents_app/useragent/",
        "/admin/agents_app/useragent/add/",
        "/admin/auth/user/",
        f"/admin/auth/user/{oscar.pk}/change/",
        "/admin/auth/group/add/",
        "/admin/ops_app/incident/",
        "/admin/im_app/imapp/add/",
        "/admin/im_app/imapp/add/?platform=slack",
    ):
        visit(page, base + path)


@pytest.fixture
def oscar_chat(oscar):
    """Only a chat that has a session has the ⋯ menu (an empty new chat has none)."""
    from chat_app import services

    return services.start_chat(oscar)


def test_deleting_a_chat_still_asks_first(oscar_chat, page, daphne_server):
    log_in(page, daphne_server, "oscar", "oscar-pass-123")
    chat_url = page.url
    asked = []

    def answer(dialog, accept: bool):
        asked.append(dialog.message)
        dialog.accept() if accept else dialog.dismiss()

    page.once("dialog", lambda dialog: answer(dialog, accept=False))
    page.click(".chat-menu summary")
    page.click(".chat-menu button.danger")
    page.wait_for_timeout(300)
    assert asked == ["Delete this chat?"] and page.url == chat_url

    page.once("dialog", lambda dialog: answer(dialog, accept=True))
    page.click(".chat-menu button.danger")
    page.wait_for_url(lambda url: url != chat_url)
    assert asked == ["Delete this chat?", "Delete this chat?"]
    assert violations(page) == []
