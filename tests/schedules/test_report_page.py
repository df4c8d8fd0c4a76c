"""The report page (issue 29, finding 14): the reporter's narrative rendered as sanitised Markdown
in a readable column that never widens the page, and the figures and the narrative covering one
window, shown on the page as "From … to …"."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.urls import reverse

from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls
from ops_app.models import ChangeEvent, Incident
from schedules_app import figures, runner, scheduler
from schedules_app.models import Report, ScheduleRun
from tests.support.browser import log_in, screenshot
from tests.support.schedules import make_schedule

pytestmark = pytest.mark.django_db(transaction=True)

# A daily report run at 06:00 on 2026-03-03 covers 2026-03-02 00:00 – 2026-03-03 00:00 UTC, which
# is not "the last 24 hours" before the run (2026-03-02 06:00 – 2026-03-03 06:00).
START = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)
END = START + dt.timedelta(days=1)
RUN_AT = END + dt.timedelta(hours=6)
TOKEN = "x" * 1000
NARRATIVE = f"""## Headline

A **busy** Monday.

- checkout failed twice
- one disk filled up

| metric | value |
|---|---|
| opened | 3 |

<script>window.reportScriptRan = true</script>

{TOKEN}
"""


def a_report(org, narrative: str = NARRATIVE) -> Report:
    return Report.objects.create(
        organization=org,
        period="daily",
        period_start=START,
        period_end=END,
        figures=figures.compute(org.pk, START, END),
        narrative=narrative,
    )


def test_the_narrative_is_rendered_as_safe_markdown_on_the_page_and_the_print_view(client, org, member):
    report = a_report(org)
    client.force_login(member)
    for name in ("report", "report-print"):
        page = client.get(reverse(name, args=[report.pk])).content.decode()
        narrative = page.split('class="narrative-text"', 1)[1]
        assert "<h2>Headline</h2>" in narrative and "<strong>busy</strong>" in narrative
        assert "<li>checkout failed twice</li>" in narrative
        assert "<th>metric</th>" in narrative and "<td>3</td>" in narrative
        assert "<script" not in narrative and "## Headline" not in narrative


def test_the_page_shows_the_window_in_the_readers_language_and_zone(client, org, member):
    report = a_report(org)
    member.membership.timezone = "Europe/Paris"
    member.membership.save(update_fields=["timezone"])
    client.force_login(member)
    english = client.get(reverse("report", args=[report.pk])).content.decode()
    assert "From " in english and "(Europe/Paris)" in english
    for edge in (START, END):  # the machine-readable instant stays ISO
        assert f'<time datetime="{edge.isoformat()}"' in english
    french = client.get(reverse("report", args=[report.pk]), HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    # Midnight UTC is 01:00 in Paris (winter time), written the French way.
    assert "Du " in french and "2 mars 2026 01:00" in french and "3 mars 2026 01:00" in french
    printable = client.get(reverse("report-print", args=[report.pk]), HTTP_ACCEPT_LANGUAGE="fr")
    assert "2 mars 2026 01:00" in printable.content.decode()


def at_the_edges(org) -> None:
    """One incident and one change at each edge of the window: the first instant is in, the last
    microsecond is in, the end itself and the microsecond before the start are out."""
    tick = dt.timedelta(microseconds=1)
    for label, at in (("first", START), ("last", END - tick), ("after", END), ("before", START - tick)):
        Incident.objects.create(organization=org, title=f"incident {label}", started_at=at)
        ChangeEvent.objects.create(
            organization=org,
            occurred_at=at,
            actor_name="oscar",
            action="update",
            resource_type="device",
            resource_id="1",
            resource_name="db-01",
            summary=f"change {label}",
        )
    # Inside "the last 24 hours" before the run but after the window: the old mismatch.
    morning = END + dt.timedelta(hours=3)
    Incident.objects.create(organization=org, title="incident morning", started_at=morning)


def test_the_figures_and_the_narratives_look_ups_cover_the_same_window(client, org, member, agents_llm):
    at_the_edges(org)
    agents_llm.add(
        "reporter",
        tool_calls(call("query_change_events", {}), call("query_incidents", {})),
        text("Two incidents and two changes."),
    )
    schedule = make_schedule(org, "daily", kind="report", persona="reporter", period="daily", prompt="")
    run = scheduler.create_manual_run(schedule, now=RUN_AT)
    runner.execute_run(run.pk)
    run = ScheduleRun.objects.get(pk=run.pk)
    assert run.state == "finished", run.error
    report = run.report

    assert (report.period_start, report.period_end) == (START, END)
    assert report.figures["incidents"]["opened"] == 2
    assert sorted(c["what"] for c in report.figures["changes"]["latest"]) == ["change first", "change last"]
    prompt = next(m["content"] for m in agents_llm.seen["reporter"][0].messages if m["role"] == "user")
    assert f"from {START.isoformat()} (included) to {END.isoformat()} (excluded)" in prompt
    # The look-ups the reporter made without a window answered over the report's window.
    changes, incidents = (json.loads(m["content"]) for m in tool_messages(agents_llm.seen["reporter"][1]))
    assert sorted(c["summary"] for c in changes["changes"]) == ["change first", "change last"]
    assert sorted(i["title"] for i in incidents["incidents"]) == ["incident first", "incident last"]

    client.force_login(member)
    page = client.get(reverse("report", args=[report.pk])).content.decode()
    assert "From " in page and "2026-03-02 00:00" in page and "2026-03-03 00:00" in page
    assert "Incidents opened: <strong>2</strong>" in page


@pytest.fixture
def report_page(member, daphne_server, browser, monkeypatch):
    from django.db import connections

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    contexts = []

    def open_at(width: int, height: int, path: str):
        context = browser.new_context(viewport={"width": width, "height": height})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(20_000)
        log_in(page, daphne_server, "alice", "alice-pass-123")
        page.goto(daphne_server + path)
        return page

    yield open_at
    for context in contexts:
        context.close()
    connections.close_all()


@pytest.mark.browser
@pytest.mark.parametrize(("width", "height"), [(1440, 900), (390, 844)])
@pytest.mark.parametrize("view", ["report", "report-print"])
def test_a_thousand_character_token_never_widens_the_page(org, report_page, width, height, view):
    report = a_report(org)
    page = report_page(width, height, reverse(view, args=[report.pk]))
    page.wait_for_selector(".narrative-text h2")
    screenshot(page, f"{view}-{width}")
    widths = page.evaluate(
        "() => ({page: document.documentElement.scrollWidth, viewport: window.innerWidth,"
        " column: document.querySelector('.narrative-text').getBoundingClientRect().width,"
        " table: getComputedStyle(document.querySelector('.narrative-text table')).overflowX,"
        " line: (() => { const probe = document.createElement('span');"
        " probe.style.cssText = 'display:block;width:72ch;position:absolute;visibility:hidden';"
        " document.querySelector('.narrative-text').append(probe);"
        " const w = probe.getBoundingClientRect().width; probe.remove(); return w; })()})"
    )
    assert widths["page"] == widths["viewport"]
    assert widths["column"] <= widths["line"] + 1  # a readable line, not the whole screen
    assert widths["table"] == "auto"  # a wide table scrolls in its own box
    assert page.evaluate("window.reportScriptRan === undefined")
    assert page.locator(".narrative-text li").count() == 2


def test_the_title_names_the_days_of_the_schedules_zone_in_the_readers_language(client, org, member):
    schedule = make_schedule(org, "madrid", kind="report", persona="reporter", period="daily", prompt="")
    schedule.timezone = "Europe/Madrid"
    schedule.save(update_fields=["timezone"])
    midnight_in_madrid = dt.datetime(2026, 3, 1, 23, 0, tzinfo=dt.UTC)
    report = Report.objects.create(
        organization=org, schedule=schedule, period="daily", period_start=midnight_in_madrid,
        period_end=midnight_in_madrid + dt.timedelta(days=1), figures={}, narrative="",
    )  # fmt: skip
    client.force_login(member)
    english = client.get(reverse("report", args=[report.pk])).content.decode()
    assert "<h1>Daily report 2026-03-02 – 2026-03-03</h1>" in english
    french = client.get(reverse("report", args=[report.pk]), HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "<h1>Rapport quotidien 2 mars 2026 – 3 mars 2026</h1>" in french
