"""Issue 29, finding 8, as a newcomer meets it: a fresh demo (what `bin/start` sets up, the offline
model, the Ongrid host allowed as a device) in Chromium; clicking each example prompt and sending it
gives an answer with no tool error in it."""

from __future__ import annotations

import dataclasses
import re
from io import StringIO

import pytest
from django.core.management import call_command

from tests.support.browser import log_in, run_daphne, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
ANSWER_MS = 60_000


@pytest.fixture
def demo(settings, tmp_path) -> tuple[str, str]:
    """The bootstrap's admin and password (demo organization and estate loaded)."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, data_dir=tmp_path, prometheus_url="")
    printed = StringIO()
    call_command("ongrid_bootstrap", stdout=printed)
    return re.search(r"as (\S+) / (\S+)", printed.getvalue()).groups()


@pytest.fixture
def demo_server(demo, tmp_path):
    yield from run_daphne(tmp_path, ONGRID_LLM="offline", ONGRID_ALLOW_LOCAL_DEVICE="1", PROMETHEUS_URL="")


def test_each_example_prompt_of_a_fresh_demo_gets_an_answer_without_errors(demo, demo_server, browser):
    page = browser.new_context(viewport={"width": 1440, "height": 900}).new_page()
    page.set_default_timeout(ANSWER_MS)
    log_in(page, demo_server, *demo)
    examples = page.locator("button.example")
    prompts = [examples.nth(index).inner_text() for index in range(examples.count())]
    assert len(prompts) == 4 and any("ongrid-manager" in prompt for prompt in prompts), prompts
    for index, prompt in enumerate(prompts):
        page.goto(demo_server + "/chat/new/")
        page.locator("button.example").nth(index).click()
        assert page.input_value("#message") == prompt  # the click puts it in the composer
        page.press("#message", "Enter")
        answer = page.wait_for_selector(f".bubble.answer >> nth={0}").inner_text()
        assert "Error:" not in answer and "not configured" not in answer, (prompt, answer)
        assert page.locator(".tile.failed, .bubble.error").count() == 0, prompt
        if index == 0:
            assert "db_pool_size" in answer, answer  # the incident's likely cause, named
            screenshot(page, "demo-first-example")
