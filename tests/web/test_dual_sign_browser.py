"""Dual sign in a real browser: a `dual-sign-required` write waits on its card in the chat page;
the chat's owner clicks Approve (or Reject) in headless Chromium; the held call then runs (or
does not), and the card, redrawn from the database, still says so after a reload."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import threading
import time
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import Client

from agents_app.models import MutatingProposal
from fakes.openai_server import text
from ops_app.models import Incident
from tests.support.gate import (
    DUAL,
    ack_arguments,
    gated_call,
    make_chat,
    make_incident,
    make_user_agent,
    make_worker,
)
from tests.support.required import require

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("fresh_registry")]

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


class HeldCall(threading.Thread):
    """Runs one gated call on its own event loop, as a daphne or Celery process would."""

    def __init__(self, worker, incident: Incident):
        super().__init__(daemon=True)
        self.worker, self.incident, self.outcome, self.error = worker, incident, None, None

    def run(self) -> None:
        async def call():
            try:
                return await gated_call(
                    self.worker, DUAL, "acknowledge_incident", ack_arguments(self.incident), "b-1"
                )
            finally:
                await sync_to_async(connections.close_all)()

        try:
            self.outcome = asyncio.run(call())
        except BaseException as error:  # noqa: BLE001 - reported by the test
            self.error = error


def wait_for(condition, within: float, what: str):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def browser(monkeypatch):
    require(shutil.which(CHROMIUM) is not None, "Chromium (Debian package chromium)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop on this thread, which Django's guard mistakes for
    # async code; the test's own ORM calls are plain synchronous ones.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()
            # While Playwright's loop is up, Django keeps this thread's connections in a separate
            # context-local slot that pytest-django never closes; close them here.
            connections.close_all()


@pytest.fixture
def page(browser, live_server, member):
    """A tab signed in as the chat's owner. Closed before the database goes: a keep-alive
    connection would otherwise hold a live-server thread, and its database session, open."""
    client = Client()
    client.force_login(member)
    host = live_server.url.split("//", 1)[1].split(":")[0]
    context = browser.new_context()
    context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "domain": host, "path": "/"}]
    )
    yield context.new_page()
    context.close()


@pytest.fixture
def held(org, member, agents_llm, settings):
    """A dual-sign call the reviewer approved, now waiting for a human."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, approval_timeout=60.0)
    make_user_agent(org, DUAL, "dual-sign-required", ["acknowledge_incident"])
    chat = make_chat(member)
    incident = make_incident(org)
    agents_llm.add("reviewer", text("Decision: approve\nSOP: pass — runbook RB-12\nRollback: pass"))
    call = HeldCall(make_worker(chat, DUAL), incident)
    call.start()
    proposal = wait_for(
        lambda: MutatingProposal.objects.filter(tool_call_id="b-1", reviewer_decision="approve").first(),
        30,
        "the reviewer's approval",
    )
    yield chat, incident, proposal, call
    call.join(70)


@pytest.mark.parametrize(
    "button, decision, fails",
    [("Approve", "approve", False), ("Reject", "reject", False), ("Approve", "approve", True)],
)
def test_the_owner_signs_in_the_chat_page(live_server, member, held, page, button, decision, fails):
    """`fails`: someone resolved the incident meanwhile, so the approved acknowledgement fails when
    it runs; the card must say "failed" with the reason, never "executed"."""
    from playwright.sync_api import expect

    chat, incident, proposal, call = held
    refusal = f"incident {incident.pk} is resolved; it cannot be acknowledged again"
    page.goto(f"{live_server.url}/chat/{chat.pk}/")

    card = page.locator(f"#proposal-{proposal.pk}")
    expect(card).to_be_visible()
    expect(card).to_contain_text("Awaiting your approval")
    expect(card.locator(".proposal-action")).to_have_text("acknowledge incident")
    expect(card.locator(".proposal-target")).to_have_text(f"incident:{incident.pk}")
    expect(card.locator(".proposal-radius")).to_have_text("single_device")
    expect(card.locator(".proposal-reviewer")).to_contain_text("runbook RB-12")
    assert Incident.objects.get(pk=incident.pk).status == "firing"  # nothing ran before the human
    ARTIFACTS.mkdir(exist_ok=True)
    if not fails:
        page.screenshot(path=str(ARTIFACTS / f"dual-sign-{decision}-pending.png"), full_page=True)
    else:
        Incident.objects.filter(pk=incident.pk).update(status="resolved")

    card.get_by_role("button", name=button).click()

    expect(card).to_contain_text("Approved" if decision == "approve" else "Rejected")
    call.join(30)
    assert call.error is None and call.outcome is not None
    if fails:
        assert call.outcome.status == "error"  # (this live server has no websocket: reload)
        proposal.refresh_from_db()
        assert (proposal.executed_at, proposal.outcome) == (None, "failed")
        page.reload()
        after = page.locator(f"#proposal-{proposal.pk}")
        expect(after.locator(".proposal-status")).to_have_text(f"Approved · failed: {refusal}")
        expect(after).not_to_contain_text("executed")
        return
    expected_status = "acknowledged" if decision == "approve" else "firing"
    assert call.outcome.status == ("ok" if decision == "approve" else "rejected")
    assert Incident.objects.get(pk=incident.pk).status == expected_status
    proposal.refresh_from_db()
    assert proposal.decision == decision and proposal.human_approver == member
    assert (proposal.executed_at is not None) is (decision == "approve")

    page.reload()  # the card is rebuilt from the database
    after = page.locator(f"#proposal-{proposal.pk}")
    expect(after).to_contain_text("Approved · executed" if decision == "approve" else "Rejected")
    expect(after.get_by_role("button", name="Approve")).to_have_count(0)
    page.screenshot(path=str(ARTIFACTS / f"dual-sign-{decision}-after-reload.png"), full_page=True)
