"""Stop and a message typed mid-turn, in headless Chromium against a real daphne (embedded shape)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from fakes.openai_server import call, held, text, tool_calls
from ops_app.models import Device
from tests.support.browser import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WAIT_MS = 20_000
PRESS_AND_READ = """([button, status]) => {
  const pressed = document.querySelector(button);
  pressed.click();
  return [pressed.textContent, document.querySelector(status).textContent];
}"""


@pytest.fixture
def page(member, daphne_server, browser):
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    log_in(page, daphne_server, "alice", "alice-pass-123")
    page.wait_for_selector(".connection:empty", state="attached")
    yield page
    context.close()


def send(page, message: str) -> None:
    page.fill("#message", message)
    page.press("#message", "Enter")


def dispatch(description: str, prompt: str) -> dict:
    return call(
        "AgentTool", {"description": description, "subagent_type": "specialist-disk", "prompt": prompt}
    )


def wait_for(predicate, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        assert time.monotonic() < deadline, "the condition was not reached in time"
        time.sleep(0.02)


def test_stop_during_a_model_call_that_never_answers(page, agents_llm, fake_llm):
    agents_llm.add("default", tool_calls(dispatch("Slow scan", "Scan web-01.")))
    agents_llm.add("specialist-disk", held(60))
    send(page, "scan web-01")
    page.wait_for_selector(".tile.running")
    wait_for(lambda: len(fake_llm.chat_requests) >= 2)  # the worker's model call is in flight

    stopped_at = time.monotonic()
    # What the page shows in the very task of the click, before any answer from the server.
    shown = page.evaluate(PRESS_AND_READ, ["#turn-controls button.stop", ".tile .tile-status"])
    assert shown == ["Stopping…", "stopping…"]
    bubble = page.wait_for_selector(".bubble.stopped", timeout=2000)

    assert time.monotonic() - stopped_at < 2.0
    assert bubble.inner_text().startswith("Stopped by you")
    assert "Cut off: running a specialist-disk worker (Slow scan)" in bubble.inner_text()
    tile = page.wait_for_selector(".tile.killed")
    assert tile.inner_text().count("Stopped by you") == 1 and "stopped: stopped" not in tile.inner_text()
    assert page.locator(".bubble.error").count() == 0  # a stop is not an error
    assert page.locator("#turn-controls button.stop").count() == 0
    assert len(fake_llm.hangups) == 1  # the model request was closed
    screenshot(page, "chat-stopped-by-you")


def _pid_reading(path: Path) -> int | None:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if str(path).encode() in Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0"):
                    return int(entry)
            except OSError:
                continue
    return None


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture
def local_device(org) -> Device:
    """Created before the browser starts (Playwright's sync API runs a loop in this thread)."""
    return Device.objects.create(organization=org, name="web-01", transport=Device.Transport.LOCAL)


def test_stop_on_a_tile_kills_its_slow_local_command(local_device, page, agents_llm, tmp_path_factory):
    fifo = tmp_path_factory.mktemp("pipe") / "never-written"  # not under the server's (protected) data dir
    os.mkfifo(fifo)  # `cat` blocks on it for ever
    agents_llm.add(
        "default", tool_calls(dispatch("Read the pipe", "cat it on web-01")), text("The read was stopped.")
    )
    agents_llm.add(
        "specialist-disk", tool_calls(call("host_bash", {"device": "web-01", "command": f"cat {fifo}"}))
    )
    send(page, "read the pipe on web-01")
    page.wait_for_selector(".tile.running")
    wait_for(lambda: _pid_reading(fifo) is not None)
    pid = _pid_reading(fifo)

    stopped_at = time.monotonic()
    shown = page.evaluate(PRESS_AND_READ, [".tile.running button.stop", ".tile .tile-status"])
    assert shown == ["Stopping…", "stopping…"]
    tile = page.wait_for_selector(".tile.killed .tile-stopped", timeout=2000)

    assert time.monotonic() - stopped_at < 2.0
    assert tile.inner_text() == "Stopped by you"
    wait_for(lambda: not _alive(pid), 1.0)
    page.wait_for_selector(".bubble.answer:has-text('The read was stopped.')")
    screenshot(page, "chat-tile-stopped-local-command")


def test_a_message_sent_mid_turn_is_kept_and_runs_when_the_turn_ends(page, agents_llm):
    release = threading.Event()

    def slow(request):
        release.wait(timeout=30)
        return text("First answer.")

    agents_llm.add("default", slow, text("Second answer."))
    send(page, "first question")
    page.wait_for_selector("#turn-controls button.stop")
    send(page, "second question")

    status = page.wait_for_selector("#composer-status:not([hidden])")
    assert "kept and will be sent when it ends" in status.inner_text()
    assert page.input_value("#message") == "second question"  # the text is not thrown away
    assert page.locator(".bubble.user").count() == 1 and page.locator(".bubble.error").count() == 0
    screenshot(page, "chat-message-held")

    release.set()
    page.wait_for_selector(".bubble.answer:has-text('First answer.')")
    page.wait_for_selector(".bubble.user:has-text('second question')")
    page.wait_for_selector(".bubble.answer:has-text('Second answer.')")
    assert page.input_value("#message") == ""
    assert page.is_hidden("#composer-status")


def test_a_held_message_can_be_taken_back(page, agents_llm):
    release = threading.Event()

    def slow(request):
        release.wait(timeout=30)
        return text("Only answer.")

    agents_llm.add("default", slow)
    send(page, "first question")
    page.wait_for_selector("#turn-controls button.stop")
    send(page, "never mind")
    page.wait_for_selector("#composer-status:not([hidden])")
    page.click("#composer-cancel")
    assert page.is_hidden("#composer-status")

    release.set()
    page.wait_for_selector(".bubble.answer:has-text('Only answer.')")
    assert page.input_value("#message") == "never mind"  # kept, not sent
    assert page.locator(".bubble.user").count() == 1
