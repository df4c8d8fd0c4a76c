"""The chat and audit pages an on-call engineer reads (issue 15), in headless Chromium against a
real daphne with the fake LLM behind it: one answer per turn, links from the chat to the audit
record, dispatch → worker links that survive a reused call id, local times, a phone viewport and
the API docs page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from audit_app.models import AuditLog
from chat_app import services
from chat_app.models import ChatSession, MessageRole
from fakes.openai_server import call, text, tool_calls
from tests.support import audit_rows
from tests.support.browser import log_in, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WAIT_MS = 20_000
WORKER_RESULT = "WORKER-FINDING: /var/log holds 38G of rotated logs"
ANSWER = "Rotated logs fill /var on web-01; see incident #7."


@pytest.fixture
def ui(daphne_server, browser, monkeypatch):
    """The browser, with this test's own ORM calls allowed while Playwright's loop is up (they are
    plain synchronous calls; daphne was started before, without this setting)."""
    from django.db import connections

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    yield browser
    connections.close_all()  # the connections opened under Playwright's loop


def open_page(browser, base: str, username: str, password: str, **context_options):
    options = {"viewport": {"width": 1200, "height": 800}, **context_options}
    context = browser.new_context(**options)
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    log_in(page, base, username, password)
    return context, page


def send(page, message: str) -> None:
    page.wait_for_selector(".connection:empty", state="attached")
    page.fill("#message", message)
    page.press("#message", "Enter")


def dispatch(description: str, prompt: str) -> dict:
    return call(
        "AgentTool", {"description": description, "subagent_type": "specialist-disk", "prompt": prompt}
    )


def script_a_turn_with_a_worker(agents_llm) -> None:
    agents_llm.add(
        "default",
        tool_calls(call("query_incidents", {"status": "firing"})),
        tool_calls(dispatch("Disk usage on web-01", "On web-01 find what fills /var.")),
        text(ANSWER),
    )
    agents_llm.add(
        "specialist-disk",
        tool_calls(call("host_du_summary", {"device": "web-01", "path": "/var"})),
        text(WORKER_RESULT),
    )


def test_one_answer_is_visible_per_turn_and_the_tile_keeps_its_tool_calls(
    org_admin, daphne_server, ui, agents_llm
):
    script_a_turn_with_a_worker(agents_llm)
    context, page = open_page(ui, daphne_server, "oscar", "oscar-pass-123")
    try:
        send(page, "what fills /var on web-01?")
        page.wait_for_selector(f".bubble.answer:has-text('{ANSWER[:20]}')")
        tile = page.locator(".tile.completed")
        tile.wait_for()
        # the worker's result is in its tile, folded: the coordinator's reply is the one answer
        assert page.get_by_text("WORKER-FINDING").is_visible() is False
        assert page.locator(".bubble.answer").count() == 1
        tool = tile.locator(".tile-tool")
        assert tool.count() == 1
        assert "host_du_summary" in tool.inner_text() and "device=web-01" in tool.inner_text()
        assert " ms" in tool.inner_text() and "running" not in tool.inner_text()
        # the incident in the answer links to its page
        assert page.get_attribute(".bubble.answer a.ref-incident", "href") == "/incidents/7/"
        screenshot(page, "ui-one-answer")
        tile.locator(".tile-result summary").click()  # one click away
        assert page.get_by_text("WORKER-FINDING").is_visible()

        page.reload()  # the same after a reload: folded result, the tool line kept
        page.wait_for_selector(".tile.completed .tile-tool:has-text('host_du_summary')")
        assert page.get_by_text("WORKER-FINDING").is_visible() is False
        assert page.locator(".bubble.answer").count() == 1
        assert page.locator(".stamp").count() >= 1  # messages are dated
    finally:
        context.close()


def test_chip_and_tile_audit_links_land_on_the_tool_call(org_admin, daphne_server, ui, agents_llm):
    script_a_turn_with_a_worker(agents_llm)
    context, page = open_page(ui, daphne_server, "oscar", "oscar-pass-123")
    try:
        send(page, "what fills /var on web-01?")
        page.wait_for_selector(".tile.completed .tile-tool a.audit-link")
        # live: the worker's tool line → its audit record
        page.click(".tile-tool a.audit-link")
        page.wait_for_url("**/audit/calls/*/")
        assert page.inner_text("h1") == "Tool call host_du_summary"
        assert "device" in page.inner_text("pre.args")
        assert page.locator(".crumbs").inner_text().count("Audit") == 1
        screenshot(page, "ui-audit-call-from-tile")
        worker = ChatSession.objects.get(agent_id="specialist-disk")
        row = AuditLog.objects.get(session=worker, tool="host_du_summary")
        assert page.url.endswith(f"/audit/calls/{row.pk}/")
        page.go_back()
        # after a reload: the coordinator's chip → its audit record
        page.reload()
        page.click("#chip-call_1 summary a.audit-link, .chip:has-text('query_incidents') a.audit-link")
        page.wait_for_url("**/audit/calls/*/")
        assert page.inner_text("h1") == "Tool call query_incidents"
        # and the audit session leads back to the chat its owner may open
        page.click(".crumbs a:has-text('Session')")
        page.click("a.to-chat")
        page.wait_for_url("**/chat/*/")
    finally:
        context.close()


def test_a_member_sees_no_audit_links(member, daphne_server, ui, agents_llm):
    script_a_turn_with_a_worker(agents_llm)
    context, page = open_page(ui, daphne_server, "alice", "alice-pass-123")
    try:
        send(page, "what fills /var on web-01?")
        page.wait_for_selector(".tile.completed .tile-tool")
        page.wait_for_selector(".bubble.answer")
        assert page.locator("a.audit-link").count() == 0
    finally:
        context.close()


def three_dispatches_with_one_call_id(org, user) -> tuple[ChatSession, list[ChatSession]]:
    """What the offline model leaves: every dispatch has the call id `offline_dispatch`, and one
    of them (the second) was refused, so it spawned no worker."""
    root = audit_rows.session(org, user, title="why is disk full on web-01")
    audit_rows.message(root, MessageRole.USER, "why is disk full on web-01")
    start = datetime(2026, 12, 1, 0, 26, tzinfo=UTC)
    workers = []
    steps = [
        (0, "ok", "Disk on web-01"),
        (5, "deduped", None),
        (10, "ok", "Logs on web-01"),
        (15, "ok", "Inodes"),
    ]
    for seconds, status, description in steps:
        at = start + timedelta(seconds=seconds)
        audit_rows.tool_call(root, "AgentTool", at=at, tool_call_id="offline_dispatch", status=status,
                             tool_class="control", duration_ms=3)  # fmt: skip
        if description:
            worker = audit_rows.session(org, user, parent=root, agent_id="specialist-disk",
                                        description=description, title=description,
                                        spawned_by_call="offline_dispatch")  # fmt: skip
            ChatSession.objects.filter(pk=worker.pk).update(created_at=at + timedelta(milliseconds=40))
            workers.append(worker)
    audit_rows.message(
        root, MessageRole.ASSISTANT, "**Three** findings:\n\n| host | use |\n|---|---|\n| web-01 | 97% |"
    )
    ChatSession.objects.filter(pk=root.pk).update(created_at=start)
    return root, workers


def test_audit_tree_links_each_dispatch_to_its_own_worker(org, auditor, daphne_server, ui):
    root, workers = three_dispatches_with_one_call_id(org, auditor)
    context, page = open_page(ui, daphne_server, "audrey", "audrey-pass-123")
    try:
        page.goto(f"{daphne_server}/audit/")
        screenshot(page, "ui-audit-list")
        # the list links a worker to its own node in its root's tree
        page.click(f"tr[data-session='{workers[2].pk}'] a")
        page.wait_for_url(f"**/audit/sessions/{workers[2].pk}/#session-{workers[2].pk}")
        node = page.locator(f"#session-{workers[2].pk}")
        assert node.is_visible() and "Inodes" in node.inner_text()
        assert (
            page.evaluate(f"document.getElementById('session-{workers[2].pk}').getBoundingClientRect().top")
            < 800
        )

        page.goto(f"{daphne_server}/audit/sessions/{root.pk}/")
        links = page.locator(f"#session-{root.pk} > .timeline a.to-worker")
        hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
        assert hrefs == [f"#session-{w.pk}" for w in workers]  # three dispatches, three workers
        refused = page.locator(f"#session-{root.pk} > .timeline li.call-deduped")
        assert refused.locator("a.to-worker").count() == 0
        for worker, href in zip(workers, hrefs, strict=True):
            page.click(f"a.to-worker[href='{href}']")
            assert page.url.endswith(href)
            assert worker.description in page.locator(href).locator(".description").inner_text()
        # Markdown rendered, safely; tables styled
        assert page.inner_text(f"#session-{root.pk} .message.role-assistant strong") == "Three"
        assert page.locator(f"#session-{root.pk} .message.role-assistant table td").count() == 2
        screenshot(page, "ui-audit-tree")

        call_row = AuditLog.objects.filter(session=root).order_by("started_at").first()
        page.goto(f"{daphne_server}/audit/calls/{call_row.pk}/")
        assert page.locator("details.json").count() >= 2
        assert page.inner_text("h1") == "Tool call AgentTool"
        screenshot(page, "ui-audit-call")
    finally:
        context.close()


def test_times_are_shown_in_the_browser_zone(org, auditor, daphne_server, ui):
    root, _ = three_dispatches_with_one_call_id(org, auditor)
    context, page = open_page(ui, daphne_server, "audrey", "audrey-pass-123", timezone_id="America/New_York")
    try:
        page.goto(f"{daphne_server}/audit/")
        created = page.locator(f"tr[data-session='{root.pk}'] time")
        # 2026-12-01 00:26 UTC is the evening before in New York
        assert created.inner_text() == "2026-11-30 19:26"
        assert "America/New_York" in created.get_attribute("title")
        assert "America/New_York" in page.inner_text(".topbar .zone")
        page.goto(f"{daphne_server}/audit/sessions/{root.pk}/")
        assert "2026-11-30 19:26:00" in page.inner_text(".totals")
        page.goto(f"{daphne_server}/chat/{root.pk}/")
        assert (
            page.locator(f"#chat-item-{root.pk} .chat-when time")
            .get_attribute("title")
            .endswith("America/New_York (UTC-05:00)")
        )
        screenshot(page, "ui-times-new-york")
    finally:
        context.close()


def test_a_phone_keeps_send_in_view_and_hides_the_chat_list(member, daphne_server, ui):
    chat = services.start_chat(member, title="long chat")
    for i in range(12):
        audit_rows.message(chat, MessageRole.USER, f"question {i} " + "why is the disk full? " * 8)
        audit_rows.message(chat, MessageRole.ASSISTANT, f"answer {i}\n\n" + "the logs are large. " * 30)
    for i in range(8):
        services.start_chat(member, title=f"why is disk full on web-0{i}")
    context, page = open_page(
        ui, daphne_server, "alice", "alice-pass-123", viewport={"width": 390, "height": 844},
        is_mobile=True, has_touch=True,
    )  # fmt: skip
    try:
        page.goto(f"{daphne_server}/chat/{chat.pk}/")
        send_box = page.locator("#send").bounding_box()
        assert send_box is not None and send_box["y"] + send_box["height"] <= 844
        assert page.locator("#chat-sidebar").is_visible() is False
        screenshot(page, "ui-phone-chat")
        page.click(".sidebar-toggle")
        assert page.locator("#chat-sidebar").is_visible()
        page.fill("#chat-filter", "web-03")
        assert page.locator("#chat-list > li:visible").count() == 1
    finally:
        context.close()


def test_the_audit_list_fits_a_phone(org, auditor, daphne_server, ui):
    three_dispatches_with_one_call_id(org, auditor)
    context, page = open_page(
        ui, daphne_server, "audrey", "audrey-pass-123", viewport={"width": 390, "height": 844}
    )
    try:
        page.goto(f"{daphne_server}/audit/")
        assert page.evaluate("document.documentElement.scrollWidth") <= 390  # no sideways scrolling
        screenshot(page, "ui-phone-audit")
    finally:
        context.close()


def test_the_api_docs_page_renders_under_the_csp(member, daphne_server, ui):
    context, page = open_page(ui, daphne_server, "alice", "alice-pass-123")
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    try:
        page.click(".sidebar-foot a:has-text('API docs')")  # the chat page's footer links
        page.wait_for_url("**/api/docs/")
        page.wait_for_selector(".swagger-ui .info .title:has-text('Ongrid API')")
        page.wait_for_selector(".opblock-tag-section")  # the operations, from /api/schema/
        assert violations == []
        screenshot(page, "ui-api-docs")
        assert page.request.get(f"{daphne_server}/favicon.ico").ok
    finally:
        context.close()
