"""While the model is asked again after a 429, the chat page says so, and the line goes when the
answer arrives (headless Chromium against a real daphne, embedded shape)."""

from __future__ import annotations

import pytest

from fakes.openai_server import error, text
from ops_app.integrations.llm_endpoints import save_llm_endpoint
from ops_app.models import LLMEndpoint
from tests.support.browser import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WAIT_MS = 20_000


@pytest.fixture
def retrying_endpoint(org, fake_llm):
    """The organization's own endpoint (the fake) with retries: the deployment's default has none
    in the browser harness (ONGRID_LLM_MAX_RETRIES=0)."""
    endpoint = LLMEndpoint(
        organization=org, name="fake", base_url=fake_llm.base_url, api_key="test-key",
        default_model="fake-model", max_retries=3,
    )  # fmt: skip
    return save_llm_endpoint(endpoint)


def test_the_chat_shows_retrying_while_the_model_asks_to_wait(
    member, retrying_endpoint, daphne_server, browser, agents_llm
):
    agents_llm.add("default", error(429, "slow down", retry_after=2), text("The disk on web-01 is fine."))
    page = browser.new_context(viewport={"width": 1200, "height": 800}).new_page()
    page.set_default_timeout(WAIT_MS)
    log_in(page, daphne_server, "alice", "alice-pass-123")
    page.wait_for_selector(".connection:empty", state="attached")
    page.fill("#message", "is the disk on web-01 fine?")
    page.press("#message", "Enter")

    line = page.wait_for_selector(".turn .stamp.retrying")
    assert line.inner_text() == "Retrying: the model answered 429 (attempt 2 of 4, in 2 s)…"
    screenshot(page, "chat-retrying")
    page.wait_for_selector(".bubble.answer:has-text('The disk on web-01 is fine.')")
    assert page.locator(".stamp.retrying").count() == 0
    assert page.locator(".bubble.error").count() == 0
