"""The chat page in headless Chromium against a real daphne, with the fake LLM behind it."""

from __future__ import annotations

import threading

import pytest

from fakes.openai_server import call, text, tool_calls
from tests.support.browser import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WAIT_MS = 20_000


def dispatch(description: str, prompt: str) -> dict:
    return call(
        "AgentTool", {"description": description, "subagent_type": "specialist-disk", "prompt": prompt}
    )


@pytest.fixture
def page(member, daphne_server, browser):
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    log_in(page, daphne_server, "alice", "alice-pass-123")
    page.wait_for_function("document.querySelector('#composer') !== null")
    yield page
    context.close()


def send(page, message: str) -> None:
    page.fill("#message", message)
    page.press("#message", "Enter")


def test_tokens_stream_then_the_final_answer_is_rendered_markdown(page, agents_llm):
    agents_llm.add(
        "default",
        text("The **disk** on `web-01` is at 97%; /var/log is the culprit.", chunk_size=4, chunk_delay=0.05),
    )
    page.wait_for_selector(".connection:empty", state="attached")
    send(page, "how full is web-01?")
    page.wait_for_selector(".bubble.user:has-text('how full is web-01?')")
    page.wait_for_selector(".bubble.streaming:not(:empty)")  # tokens arrive before the end
    screenshot(page, "chat-streaming")
    answer = page.wait_for_selector(".bubble.answer strong")
    assert answer.inner_text() == "disk"
    assert page.inner_text(".bubble.answer code") == "web-01"
    assert page.input_value("#message") == ""  # the composer is cleared and ready
    screenshot(page, "chat-answer")


def test_shift_enter_makes_a_new_line_and_does_not_send(page, agents_llm):
    page.fill("#message", "first line")
    page.press("#message", "Shift+Enter")
    page.type("#message", "second line")
    assert page.input_value("#message") == "first line\nsecond line"
    assert page.locator(".bubble.user").count() == 0


def test_a_dispatch_shows_a_tile_that_goes_running_then_completed(page, agents_llm):
    release = threading.Event()

    def slow_worker(request):
        release.wait(timeout=30)
        return text("**/var/log** holds 38G of rotated logs")

    agents_llm.add(
        "default",
        tool_calls(dispatch("Disk usage on web-01", "On web-01 find what fills /var.")),
        text("The specialist found rotated logs."),
    )
    agents_llm.add("specialist-disk", slow_worker)
    send(page, "what fills /var on web-01?")
    tile = page.wait_for_selector(".tile.running")
    assert "specialist-disk" in tile.inner_text() and "Disk usage on web-01" in tile.inner_text()
    screenshot(page, "chat-tile-running")
    release.set()
    done = page.wait_for_selector(".tile.completed")
    # The result is in the tile: open while the coordinator writes, folded (one click away) once
    # its answer is in, which on a busy machine can be before this line looks.
    assert "38G of rotated logs" in done.text_content()
    page.wait_for_selector(".bubble.answer:has-text('rotated logs')")
    screenshot(page, "chat-tile-completed")


def test_stop_on_a_running_tile_ends_it_killed(page, agents_llm):
    release = threading.Event()

    def blocked_worker(request):
        release.wait(timeout=30)
        return text("too late")

    agents_llm.add(
        "default",
        tool_calls(dispatch("Slow disk scan", "Scan everything on web-01.")),
        text("The scan was stopped."),
    )
    agents_llm.add("specialist-disk", blocked_worker)
    send(page, "scan web-01")
    page.wait_for_selector(".tile.running")
    with page.expect_response(lambda r: r.url.endswith("/stop/") and r.status == 204):
        page.click(".tile.running button.stop")
    release.set()  # the model answers only after the stop was accepted
    killed = page.wait_for_selector(".tile.killed")
    assert "Stopped by you" in killed.inner_text() and "error" not in (killed.get_attribute("class") or "")
    page.wait_for_selector(".bubble.answer:has-text('stopped')")
    screenshot(page, "chat-tile-killed")


def test_reload_mid_turn_restores_the_running_tile_and_the_stream_continues(page, agents_llm):
    release = threading.Event()

    def slow_worker(request):
        release.wait(timeout=30)
        return text("38G in /var/log")

    agents_llm.add(
        "default",
        tool_calls(dispatch("Disk usage on web-01", "On web-01 find what fills /var.")),
        text("Finished after the reload.", chunk_size=3),
    )
    agents_llm.add("specialist-disk", slow_worker)
    send(page, "disk report please")
    page.wait_for_selector(".tile.running")
    page.reload()
    page.wait_for_selector(".bubble.user:has-text('disk report please')")
    page.wait_for_selector(".tile.running:has-text('Disk usage on web-01')")
    page.wait_for_selector(".connection:empty", state="attached")
    screenshot(page, "chat-reloaded-mid-turn")
    release.set()
    page.wait_for_selector(".tile.completed")
    page.wait_for_selector(".bubble.answer:has-text('Finished after the reload.')")


def test_an_llm_failure_shows_an_error_bubble_and_the_input_stays_usable(page, agents_llm):
    from fakes.openai_server import error

    agents_llm.add("default", error(500, "the model endpoint is down"), text("Back online."))
    send(page, "hello?")
    bubble = page.wait_for_selector(".bubble.error")
    assert "the model endpoint is down" in bubble.inner_text()
    screenshot(page, "chat-error")
    send(page, "and now?")
    page.wait_for_selector(".bubble.answer:has-text('Back online.')")
