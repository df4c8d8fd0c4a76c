"""The scheduler: due times fire at their time, exactly once, whoever ticks; "Run now"."""

from __future__ import annotations

import datetime as dt
import threading
import zoneinfo

import pytest
from django.db import connection
from django.urls import reverse

from schedules_app import scheduler, timing
from schedules_app.models import Schedule, ScheduleRun
from tests.support.schedules import make_schedule

T0 = dt.datetime(2026, 3, 2, 9, 30, tzinfo=dt.UTC)


@pytest.mark.django_db
def test_a_cron_schedule_fires_at_its_time_and_not_before(org):
    schedule = make_schedule(org, cron="0 * * * *", now=T0)
    assert schedule.next_run_at == dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)

    assert scheduler.tick(T0 + dt.timedelta(minutes=29)) == []
    won = scheduler.tick(T0 + dt.timedelta(minutes=30, seconds=5))

    run = ScheduleRun.objects.get(pk=won[0])
    assert run.due_at == dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)
    assert run.trigger == ScheduleRun.Trigger.SCHEDULE
    schedule.refresh_from_db()
    assert schedule.next_run_at == dt.datetime(2026, 3, 2, 11, 0, tzinfo=dt.UTC)
    # A second tick in the same minute finds nothing due.
    assert scheduler.tick(T0 + dt.timedelta(minutes=30, seconds=40)) == []


@pytest.mark.django_db
def test_cron_follows_the_schedules_time_zone_and_intervals_count_from_the_last_run(org):
    madrid = make_schedule(org, "madrid", cron="0 7 * * *", timezone="Europe/Madrid", now=T0)
    # 07:00 in Madrid in March (before the DST change) is 06:00 UTC.
    assert madrid.next_run_at == dt.datetime(2026, 3, 3, 6, 0, tzinfo=dt.UTC)
    every = make_schedule(org, "every 15", cron="", interval_minutes=15, now=T0)
    assert every.next_run_at == T0 + dt.timedelta(minutes=15)
    assert timing.next_fire("0 7 * * *", None, "Europe/Madrid", dt.datetime(2026, 4, 1, tzinfo=dt.UTC)) == (
        dt.datetime(2026, 4, 1, 5, 0, tzinfo=dt.UTC)  # summer time: 07:00 CEST
    )


@pytest.mark.django_db
def test_a_disabled_schedule_never_fires(org):
    schedule = make_schedule(org, now=T0, enabled=False)
    assert schedule.next_run_at is None
    assert scheduler.tick(T0 + dt.timedelta(days=1)) == []


@pytest.mark.django_db(transaction=True)
def test_two_schedulers_racing_for_the_same_due_time_fire_it_once(org):
    if connection.vendor == "sqlite":
        pytest.skip("the race needs concurrent connections (run with DATABASE_URL=postgres://...)")
    schedules = [make_schedule(org, f"check {i}", now=T0) for i in range(5)]
    later = T0 + dt.timedelta(minutes=31)
    start = threading.Barrier(4, timeout=20)
    results: list[list[int]] = []

    def ticker():
        start.wait()
        try:
            results.append(scheduler.tick(later))
        finally:
            connection.close()

    threads = [threading.Thread(target=ticker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)

    claimed = sorted(run for won in results for run in won)
    assert len(results) == 4
    assert len(claimed) == len(schedules)  # each schedule's due time won by exactly one ticker
    assert ScheduleRun.objects.count() == len(schedules)


@pytest.mark.django_db
def test_a_second_claim_of_the_same_due_time_is_refused_even_from_a_stale_read(org):
    """Two processes that both read the schedule before either claimed: only one claim lands."""
    schedule = make_schedule(org, now=T0)
    stale = Schedule.objects.get(pk=schedule.pk)
    later = T0 + dt.timedelta(minutes=31)
    first = scheduler._claim(Schedule.objects.get(pk=schedule.pk), later)
    second = scheduler._claim(stale, later)
    assert first is not None and second is None
    assert ScheduleRun.objects.filter(schedule=schedule).count() == 1


@pytest.fixture
def eager_celery():
    """The Celery path run eagerly, with REDIS_URL too, so a run completes within the request."""
    from ongrid_site.celery import app as celery_app

    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


@pytest.mark.django_db(transaction=True)  # the run writes through pooled connections on other threads
def test_run_now_in_the_admin_runs_the_schedule_at_once(
    client, org, org_admin, agents_llm, settings, eager_celery
):
    from fakes.openai_server import call, text, tool_calls

    settings.ONGRID_EXECUTOR = "celery"
    schedule = make_schedule(org, now=T0)
    agents_llm.add(
        "specialist-disk",
        tool_calls(
            call("submit_finding", {"status": "ok", "summary": "All disks below 60 %.", "findings": []})
        ),
        text("All disks are fine."),
    )
    client.force_login(org_admin)
    response = client.post(
        reverse("admin:schedules_app_schedule_changelist"),
        {"action": "run_now", "_selected_action": [schedule.pk]},
        follow=True,
    )
    assert response.status_code == 200
    run = ScheduleRun.objects.get(schedule=schedule)
    assert run.trigger == ScheduleRun.Trigger.MANUAL
    assert (run.state, run.finding, run.summary) == ("finished", "ok", "All disks below 60 %.")
    schedule.refresh_from_db()
    assert schedule.last_status == "ok" and schedule.last_run_at is not None
    assert schedule.next_run_at == dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)  # the timetable is untouched
    page = client.get(reverse("admin:schedules_app_schedule_changelist")).content.decode()
    assert "Last run" in page and "Next run" in page


@pytest.mark.django_db
def test_new_schedules_run_on_the_organizations_clock_unless_they_name_their_own(client, org, org_admin):
    org.timezone = "Europe/Madrid"
    org.save(update_fields=["timezone"])
    client.force_login(org_admin)
    add = reverse("admin:schedules_app_schedule_add")
    assert 'value="Europe/Madrid"' in client.get(add).content.decode()  # the form starts on the org's zone
    form = {
        "kind": "inspection",
        "enabled": "on",
        "persona": "specialist-disk",
        "prompt": "Check free space.",
        "open_incidents": "on",
        "period": "weekly",
        "cron": "0 7 * * *",
        "interval_minutes": "",
        "email_to": "",
        "webhook_url": "",
        "webhook_secret": "",
    }
    for name, zone in (("left blank", ""), ("own zone", "America/New_York")):
        response = client.post(add, {**form, "name": name, "timezone": zone})
        assert response.status_code == 302, response.content.decode()[:2000]

    inherited = Schedule.objects.get(name="left blank")
    own = Schedule.objects.get(name="own zone")
    assert inherited.timezone == "Europe/Madrid" and own.timezone == "America/New_York"
    # 07:00 on each one's own clock, whatever the season.
    assert inherited.next_run_at.astimezone(zoneinfo.ZoneInfo("Europe/Madrid")).hour == 7
    assert own.next_run_at.astimezone(zoneinfo.ZoneInfo("America/New_York")).hour == 7
    # A schedule made in code without a zone takes the organization's too (reports' periods use it).
    assert make_schedule(org, "coded").timezone == "Europe/Madrid"
