"""The agents admin in headless Chromium: an org admin sees the built-in personas beside their
own user agents, copies one to edit, and the next chat's worker runs the edited copy."""

from __future__ import annotations

import re

import pytest
from django.db import connections

from agents_app.models import UserAgent
from fakes.openai_server import call, text, tool_calls
from tests.support.browser import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WAIT_MS = 20_000
EDITED = "Always report sizes in gibibytes and name the three largest directories."


@pytest.fixture
def page(org_admin, daphne_server, browser, monkeypatch):
    # The test reads the database between clicks, under Playwright's own event loop.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    log_in(page, daphne_server, "oscar", "oscar-pass-123")
    yield page
    context.close()
    connections.close_all()  # the connections opened under Playwright's loop


def test_built_ins_are_listed_and_copy_to_edit_makes_the_override_the_next_chat_uses(
    page, daphne_server, agents_llm, org
):
    page.goto(daphne_server + "/admin/agents_app/useragent/")
    row = page.locator("tr", has_text="specialist-disk").first
    assert "builtin" in row.inner_text()
    assert page.locator("text=specialist-network").count() >= 1  # the other built-ins are there too
    screenshot(page, "admin-agents-built-ins")

    row.get_by_text("Copy to edit").click()
    button = page.get_by_role("button", name="Copy to edit")
    box = button.bounding_box()
    assert box["width"] >= button.evaluate("b => b.scrollWidth")  # the whole label, not clipped
    screenshot(page, "admin-persona-copy")
    button.click()
    page.wait_for_url(re.compile(r".*/admin/agents_app/useragent/add/\?copy_of=specialist-disk.*"))
    assert not UserAgent.objects.filter(organization=org).exists()  # a draft until Save
    body = page.locator("#id_body")
    body.fill(body.input_value() + "\n\n" + EDITED)
    page.locator("input[name=_save]").click()
    page.wait_for_url("**/admin/agents_app/useragent/")
    copy = UserAgent.objects.get(organization=org, name="specialist-disk")
    assert copy.body.endswith(EDITED)

    dispatch = {"description": "du /var", "subagent_type": "specialist-disk", "prompt": "What fills /var?"}
    agents_llm.add("default", tool_calls(call("AgentTool", dispatch)), text("/var/log holds 38G."))
    agents_llm.add("specialist-disk", text("/var/log 38G"))
    page.goto(daphne_server + "/chat/")
    page.wait_for_function("document.querySelector('#composer') !== null")
    page.fill("#message", "what fills /var on web-01?")
    page.press("#message", "Enter")
    page.wait_for_selector(".bubble.answer:has-text('38G')")
    worker_prompts = [
        message["content"]
        for request in agents_llm.seen["specialist-disk"]
        for message in request.messages
        if message.get("role") == "system"
    ]
    assert any(EDITED in prompt for prompt in worker_prompts)
