"""Retention: old audit data goes, in batches; recent data and open sessions stay."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from django.conf import settings as django_settings
from django.core.management import CommandError, call_command

from audit_app import retention
from audit_app.models import AuditLog, LLMCall
from audit_app.tasks import purge_audit_task
from chat_app.models import ChatMessage, ChatSession
from tests.support import audit_rows

pytestmark = pytest.mark.django_db

NOW = datetime.now(UTC)
OLD = NOW - timedelta(days=100)
RECENT = NOW - timedelta(days=2)


def age(chat: ChatSession, when: datetime) -> ChatSession:
    """Backdate a session and its messages (both are stamped with auto_now_add at creation)."""
    ChatSession.objects.filter(pk=chat.pk).update(created_at=when)
    ChatMessage.objects.filter(session=chat).update(created_at=when)
    return chat


def old_tree(org, user, title: str, **root_fields):
    chat = audit_rows.session(org, user, title=title, **root_fields)
    audit_rows.message(chat, "user", title)
    worker = audit_rows.session(org, user, parent=chat, agent_id="specialist-disk", title=f"{title} worker")
    audit_rows.message(worker, "user", "brief")
    for row in (chat, worker):
        audit_rows.tool_call(row, "query_devices", at=OLD)
        audit_rows.llm_call(row, at=OLD)
        age(row, OLD)
    return chat, worker


@pytest.fixture
def data(org, member):
    quiet, quiet_worker = old_tree(org, member, "quiet")  # everything old: goes
    revived, _ = old_tree(org, member, "revived")  # old, but a message arrived recently: tree stays
    audit_rows.message(revived, "user", "and again today?")
    running, _ = old_tree(org, member, "running", status="running")  # an open session: untouched
    busy, busy_worker = old_tree(org, member, "busy-worker")  # the coordinator waits on a running worker
    ChatSession.objects.filter(pk=busy_worker.pk).update(status="running")
    fresh = audit_rows.session(org, member, title="fresh")
    fresh_call = audit_rows.tool_call(fresh, "query_devices", at=RECENT)
    fresh_llm = audit_rows.llm_call(fresh, at=RECENT)
    orphan = audit_rows.tool_call(fresh, "query_incidents", at=OLD)  # old row, closed... idle session
    return locals()


def test_purge_deletes_exactly_the_expired_data(data):
    report = retention.purge(days=30, batch_size=2, now=NOW)

    remaining = set(ChatSession.objects.filter(parent_session__isnull=True).values_list("title", flat=True))
    assert remaining == {"revived", "running", "busy-worker", "fresh"}
    assert not ChatMessage.objects.filter(session_id__in=[data["quiet"].pk, data["quiet_worker"].pk]).exists()
    assert report.sessions == 1
    # audit rows of open sessions stay, whatever their age
    running_tree = [data["running"].pk, data["busy_worker"].pk]
    assert AuditLog.objects.filter(session_id__in=running_tree).count() == 2
    assert LLMCall.objects.filter(session_id__in=running_tree).count() == 2
    # every other old row went; recent rows stayed
    assert set(AuditLog.objects.exclude(session_id__in=running_tree).values_list("pk", flat=True)) == {
        data["fresh_call"].pk
    }
    assert set(LLMCall.objects.exclude(session_id__in=running_tree).values_list("pk", flat=True)) == {
        data["fresh_llm"].pk
    }
    assert report.audit_logs == 7 and report.llm_calls == 6  # 4 trees x 2 sessions, minus 2 open; + orphan


def test_a_second_run_finds_nothing_and_young_data_is_never_touched(data):
    retention.purge(days=30, now=NOW)
    again = retention.purge(days=30, now=NOW)
    assert (again.audit_logs, again.llm_calls, again.sessions) == (0, 0, 0)
    nothing = retention.purge(days=365, now=NOW)
    assert (nothing.audit_logs, nothing.llm_calls, nothing.sessions) == (0, 0, 0)


def test_the_command_reports_and_refuses_without_a_retention(data, capsys, settings):
    call_command("ongrid_purge_audit", days=30, batch_size=3)
    assert "7 tool calls, 6 LLM calls, 1 session trees" in capsys.readouterr().out
    settings.CONFIG = dataclasses.replace(settings.CONFIG, audit_retention_days=0)
    with pytest.raises(CommandError, match="ONGRID_AUDIT_RETENTION_DAYS"):
        call_command("ongrid_purge_audit")
    with pytest.raises(CommandError, match="batch-size"):
        call_command("ongrid_purge_audit", days=3, batch_size=0)


def test_the_nightly_task_follows_the_configured_retention(data, settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, audit_retention_days=0)
    assert purge_audit_task() == "retention disabled"
    assert AuditLog.objects.filter(pk=data["orphan"].pk).exists()
    settings.CONFIG = dataclasses.replace(settings.CONFIG, audit_retention_days=30)
    assert "7 tool calls" in purge_audit_task()
    assert not AuditLog.objects.filter(pk=data["orphan"].pk).exists()


def test_beat_runs_the_purge_task_daily():
    from ongrid_site.celery import app

    entry = django_settings.CELERY_BEAT_SCHEDULE["purge-expired-audit-data"]
    assert entry["schedule"] == 86400.0
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks
