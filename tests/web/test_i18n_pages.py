"""The pages an on-call engineer reads, in French and Simplified Chinese (issue 29, finding 10):
the incident page's severities, statuses, timeline and stored reasons, the audit list's filters and
values, the report page, local dates written the language's way instead of ISO, and relative
times; and the CI check that catches a template string left untranslated on those pages."""

from __future__ import annotations

import datetime as dt
import html
import re

import pytest
from django.test import Client
from django.utils import timezone

from chat_app import services
from chat_app.models import ChatSession
from incidents_app.models import Investigation
from ongrid_site import translation_pages
from ops_app.models import Alert, ChangeEvent, Incident
from schedules_app.models import Report
from tests.support.browser import log_in, screenshot

pytestmark = pytest.mark.django_db

AT = dt.datetime(2026, 11, 30, 18, 26, 26, tzinfo=dt.UTC)
ISO_MINUTE = re.compile(r">\s*\d{4}-\d{2}-\d{2} \d{2}:\d{2}")  # an ISO date shown as text

INCIDENT = {
    "fr": {
        "words": ["Critique", "Pris en compte", "alerte HighLatency En cours", "a pris en compte l’incident",
                  "étape de l’investigation : get_incident_detail (ok)",
                  "L’enquêteur a terminé sans rapport valide.", "<strong>système</strong>"],
        "date": "30 nov. 2026 18:26",
    },
    "zh-hans": {
        "words": ["严重", "已确认", "告警 HighLatency", "确认了事件", "调查步骤：get_incident_detail",
                  "调查员结束时没有给出有效报告。", "<strong>系统</strong>"],
        "date": "2026年11月30日 18:26",
    },
}  # fmt: skip
ENGLISH_LEFT = [
    "Critical",
    "Acknowledged",
    "alert HighLatency",
    "investigation step:",
    "without a valid report",
]

AUDIT = {
    "fr": {"filters": [">Utilisateur<", ">Type<", ">Statut<", ">Canal<", ">Depuis<", ">Jusqu’à<"],
           "values": [">Discussion d’un utilisateur<", ">Inactive<"], "date": "30 nov. 2026 18:26"},
    "zh-hans": {"filters": [">用户<", ">类型<", ">状态<", ">渠道<", ">起始<", ">截止<"],
                "values": [">用户对话<", ">空闲<"], "date": "2026年11月30日 18:26"},
}  # fmt: skip
RELATIVE = {"fr": "il y a 9 min", "zh-hans": "9 分钟前"}
REPORT = {"fr": ("Incidents ouverts :", "Du 29 nov. 2026"), "zh-hans": ("新建事件：", "从 2026年11月29日")}


def visible(page: str) -> str:
    """The page's text as a reader sees it: no tags, entities decoded, one kind of space."""
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    return re.sub(r"[\s\u00a0\u202f]+", " ", text)


def client_in(user, language: str) -> Client:
    """A logged-in browser that asks for `language` (the user has no language setting)."""
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    client.force_login(user)
    return client


@pytest.fixture
def incident(org, member):
    incident = Incident.objects.create(
        organization=org, title="Checkout 5xx", severity="critical", status="acknowledged", started_at=AT
    )
    Alert.objects.create(
        organization=org,
        incident=incident,
        name="HighLatency",
        fingerprint="h",
        starts_at=AT,
        status="firing",
    )
    ChangeEvent.objects.create(
        organization=org, occurred_at=AT + dt.timedelta(minutes=3), actor=member, actor_name="alice",
        action="update", resource_type="incident", resource_id=str(incident.pk),
        resource_name=incident.title, summary=f"alice acknowledged incident {incident.title}",
        before={"status": "firing"}, after={"status": "acknowledged"},
    )  # fmt: skip
    ChangeEvent.objects.create(
        organization=org, occurred_at=AT - dt.timedelta(minutes=6), actor_name="system", action="update",
        resource_type="device", resource_id="9", resource_name="db-01", summary="system changed device db-01",
    )  # fmt: skip
    session = services.open_work_session(org.pk, "incident-investigator", "investigate", "look")
    Investigation.objects.create(
        organization=org, incident=incident, trigger="manual", requested_by=member, status="inconclusive",
        session=session, error="The investigator ended without a valid report.",
        finished_at=AT + dt.timedelta(minutes=8),
    )  # fmt: skip
    from audit_app.models import AuditLog

    AuditLog.objects.create(
        organization=org, session=session, tool="get_incident_detail", status="ok",
        started_at=AT + dt.timedelta(minutes=5), tool_call_id="c1",
    )  # fmt: skip
    return incident


@pytest.mark.parametrize("language", ["fr", "zh-hans"])
def test_the_incident_page_is_in_the_readers_language_with_local_dates(language, member, incident):
    page = client_in(member, language).get(f"/incidents/{incident.pk}/").content.decode()
    for words in INCIDENT[language]["words"]:
        assert words in page, words
    for english in ENGLISH_LEFT:
        assert english not in page, english
    assert INCIDENT[language]["date"] in page and not ISO_MINUTE.search(page)
    assert f'datetime="{AT.isoformat()}"' in page  # machines still read ISO 8601


@pytest.mark.parametrize("language", ["fr", "zh-hans"])
def test_the_audit_list_filters_values_and_dates_are_translated(language, auditor, member):
    chat = services.start_chat(member, title="disk")
    ChatSession.objects.filter(pk=chat.pk).update(created_at=AT)
    page = client_in(auditor, language).get("/audit/").content.decode()
    for text in AUDIT[language]["filters"] + AUDIT[language]["values"]:
        assert text in page, text
    for english in (">User<", ">Kind<", ">Channel<", ">Since<", ">User chat<", ">Idle<", ">idle<"):
        assert english not in page, english
    assert AUDIT[language]["date"] in page and not ISO_MINUTE.search(page)


@pytest.mark.parametrize("language", ["fr", "zh-hans"])
def test_relative_times_follow_the_language(language, member):
    chat = services.start_chat(member, title="disk")
    message = services.append_message(chat.pk, "user", "why is the disk full?")
    nine_minutes_ago = timezone.now() - dt.timedelta(minutes=9)
    type(message).objects.filter(pk=message.pk).update(created_at=nine_minutes_ago)
    ChatSession.objects.filter(pk=chat.pk).update(updated_at=nine_minutes_ago)
    page = client_in(member, language).get(f"/chat/{chat.pk}/").content.decode()
    assert RELATIVE[language] in page and "min ago" not in page


@pytest.mark.parametrize("language", ["fr", "zh-hans"])
def test_the_report_page_is_translated_with_local_dates(language, org, member):
    report = Report.objects.create(
        organization=org, period="daily", period_start=AT - dt.timedelta(days=1), period_end=AT,
        figures={"incidents": {"opened": 2}}, narrative="Calm.",
    )  # fmt: skip
    page = client_in(member, language).get(f"/reports/{report.pk}/").content.decode()
    label, window = REPORT[language]
    assert f"{label} 2" in visible(page) and window in visible(page)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_in_a_chinese_browser_the_incident_and_audit_pages_read_in_chinese(
    incident, auditor, daphne_server, browser, monkeypatch
):
    from django.db import connections

    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    context = browser.new_context(
        viewport={"width": 1200, "height": 900}, extra_http_headers={"Accept-Language": "zh-CN,zh;q=0.9"}
    )
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        log_in(page, daphne_server, "alice", "alice-pass-123")
        page.goto(f"{daphne_server}/incidents/{incident.pk}/")
        facts = page.inner_text(".incident-facts")
        assert "严重" in facts and "已确认" in facts and "2026年11月30日" in facts
        timeline = page.inner_text("#timeline")
        assert "告警 HighLatency" in timeline and "alice 确认了事件" in timeline
        assert "调查员结束时没有给出有效报告。" in page.inner_text("#investigation")
        screenshot(page, "incident-zh-hans")
        page.context.clear_cookies()
        log_in(page, daphne_server, "audrey", "audrey-pass-123")
        page.goto(f"{daphne_server}/audit/")
        filters = page.inner_text(".audit-filters")
        assert "类型" in filters and "状态" in filters and "渠道" in filters and "Kind" not in filters
        assert "工作者任务" in page.inner_text(".sessions-table")  # the investigation's work session
        screenshot(page, "audit-zh-hans")
    finally:
        context.close()
        connections.close_all()


def test_the_page_check_reports_english_that_skipped_gettext_and_nothing_else():
    page = (
        '<p>⟦Acknowledged by %(name)s⟧ <a title="⟦Open⟧">Checkout 5xx</a></p>'
        "<p>⟦From <time>⟦Nov.⟧ 1</time> to⟧</p><code>kubectl get pods</code>"
        '<p>Forgot this one</p><span aria-label="Close me"></span><p>UTC · Slack</p>'
    )
    found = translation_pages.untranslated_text(page, {"Checkout 5xx"})
    assert sorted(found) == ["Close me", "Forgot this one"]


def test_the_covered_pages_pass_the_check_and_fail_it_with_an_untranslated_string(tmp_path, settings):
    """The check renders the incident, audit, chat and schedules pages: clean today, and a
    sentence added outside {% translate %} to a fragment the report page includes is caught."""
    seeded = translation_pages.seed()
    assert translation_pages.page_problems(seeded) == []
    assert {"incident", "audit", "chat", "report", "schedule run"} <= set(translation_pages.COVERED)
    forged = tmp_path / "schedules" / "_window.html"
    forged.parent.mkdir()
    forged.write_text("<p>Forgot to translate this</p>", encoding="utf-8")
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [tmp_path, *settings.TEMPLATES[0]["DIRS"]]}]
    problems = translation_pages.page_problems(seeded)
    assert any("report page" in p and "Forgot to translate this" in p for p in problems), problems
    assert all("Forgot" in p for p in problems), problems
