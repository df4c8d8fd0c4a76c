"""Issue 29, findings 7, 9 and 15 in headless Chromium against a real daphne: a new chat takes its
address and title live, streamed Markdown is rendered (and sanitised) while it streams, the
coordinator's lead-in before a dispatch is its own bubble, a kept message survives a reload."""

from __future__ import annotations

import re
import threading

import pytest

from fakes.openai_server import call, stalled, text, tool_calls
from tests.support.browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WAIT_MS = 20_000


@pytest.fixture
def page(member, daphne_server, browser):
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    log_in(page, daphne_server, "alice", "alice-pass-123")
    page.wait_for_selector(".connection:empty", state="attached")  # the websocket is up
    yield page
    context.close()


def send(page, message: str) -> None:
    page.fill("#message", message)
    page.press("#message", "Enter")


def test_a_new_chat_takes_its_address_and_title_with_the_first_message(page, agents_llm):
    from playwright.sync_api import expect

    assert page.url.endswith("/chat/new/") and page.inner_text("#crumb-title") == "New chat"
    agents_llm.add("default", text("Disk is fine."))
    send(page, "how full is web-01?")
    page.wait_for_selector(".bubble.answer:has-text('Disk is fine.')")
    page.wait_for_url(re.compile(r"/chat/\d+/$"))
    chat_id = int(page.url.rstrip("/").rsplit("/", 1)[-1])
    assert page.inner_text("#crumb-title") == "how full is web-01?"  # no reload needed
    assert page.title() == "how full is web-01? · Ongrid"
    assert page.inner_text(f"#chat-link-{chat_id}") == "how full is web-01?"
    page.reload()
    page.wait_for_selector(".bubble.answer:has-text('Disk is fine.')")  # the same chat, saved
    page.click(".chat-menu summary")
    page.fill(f"#rename-{chat_id}", "Disk on web-01")
    page.click(".chat-menu button:has-text('Rename')")
    page.wait_for_selector("#crumb-title:has-text('Disk on web-01')")  # a rename shows at once too
    expect(page).to_have_title("Disk on web-01 · Ongrid")


def test_streamed_markdown_is_rendered_before_the_end_and_the_lead_in_stands_apart(page, agents_llm):
    agents_llm.add(
        "default",
        tool_calls(
            call(
                "AgentTool",
                {"description": "Load on checkout-01", "subagent_type": "specialist-disk", "prompt": "Load?"},
            ),
            text="I'll ask the disk specialist.",
        ),
        stalled(
            '## Load on checkout-01\n\nThe host is **busy** <img src=x onerror="window.pwned=1">'
            "<script>window.pwned=2</script>\n\n| metric | value |\n|---|---|\n| load | 7.9 |\n",
            seconds=30,
        ),
    )
    agents_llm.add("specialist-disk", text("load 7.9 on 4 cores"))
    send(page, "why is checkout slow?")
    page.wait_for_selector(".bubble.streaming table td:has-text('7.9')")  # rendered mid-turn
    assert page.is_visible("#turn-controls button.stop")  # the turn has not ended
    assert page.inner_text(".bubble.streaming h2") == "Load on checkout-01"
    assert page.inner_text(".bubble.streaming strong") == "busy"
    shown = page.inner_text(".bubble.streaming")
    assert "##" not in shown and "**" not in shown and "|" not in shown
    assert page.locator(".bubble.streaming img, .bubble.streaming script").count() == 0
    assert page.evaluate("window.pwned === undefined")
    lead = page.inner_text(".activity .bubble.lead")
    assert lead == "I'll ask the disk specialist."  # its own bubble, above the tile
    assert not shown.startswith("I'll ask") and "specialist.## Load" not in page.inner_text("#transcript")
    page.click("#turn-controls button.stop")
    page.wait_for_selector(".bubble.stopped")
    page.reload()  # the saved transcript shows the lead-in the same way, above the tile
    page.wait_for_selector(".activity .bubble.lead + .tile")
    assert page.inner_text(".activity .bubble.lead") == "I'll ask the disk specialist."


def test_a_message_kept_during_a_turn_survives_a_reload_and_is_sent_when_it_ends(page, agents_llm):
    release = threading.Event()

    def slow(request):
        release.wait(timeout=30)
        return text("First answer.")

    agents_llm.add("default", slow, text("Second answer."))
    send(page, "first question")
    page.wait_for_selector("#turn-controls button.stop")
    page.wait_for_url(re.compile(r"/chat/\d+/$"))
    send(page, "second question, typed while the first runs")
    page.wait_for_selector("#composer-status:not([hidden])")
    page.reload()
    page.wait_for_selector("#composer-status:not([hidden])")  # still kept, still said so
    assert page.input_value("#message") == "second question, typed while the first runs"
    page.wait_for_selector(".connection:empty", state="attached")
    release.set()
    page.wait_for_selector(".bubble.user:has-text('second question, typed while the first runs')")
    page.wait_for_selector(".bubble.answer:has-text('Second answer.')")
    assert page.input_value("#message") == ""
    kept = "Object.keys(window.sessionStorage).filter(k => k.startsWith('ongrid.kept.'))"
    assert page.evaluate(kept) == []  # cleared once sent
    page.reload()
    assert page.input_value("#message") == "" and page.is_hidden("#composer-status")
