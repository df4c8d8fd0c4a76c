"""A schedule's output in the team chat: an inspection's finding or a report, posted with a link to
its page to the summary channel of each enabled IM app of the schedule's organization, only when
the schedule has IM delivery on, and never failing the run when a chat is down."""

from __future__ import annotations

import dataclasses

import pytest

from fakes.openai_server import call, text, tool_calls
from fakes.slack_api import FakeSlack
from fakes.telegram_api import FakeTelegram
from schedules_app import runner, scheduler
from schedules_app.models import ScheduleRun
from tests.support.im import slack_app, telegram_app
from tests.support.schedules import make_schedule

pytestmark = pytest.mark.django_db(transaction=True)

PROBLEM = {
    "status": "problem",
    "summary": "db-01 /var is nearly full.",
    "findings": [
        {"title": "/var over 85 %", "severity": "problem", "target": "db-01", "evidence": "91% used"}
    ],
}


@pytest.fixture
def fakes():
    telegram, slack = FakeTelegram().start(), FakeSlack().start()
    yield telegram, slack
    telegram.stop()
    slack.stop()


def run_once(schedule) -> ScheduleRun:
    run = scheduler.create_manual_run(schedule)
    runner.execute_run(run.pk)
    return ScheduleRun.objects.get(pk=run.pk)


def inspection_finds(agents_llm, finding: dict) -> None:
    agents_llm.add("specialist-disk", tool_calls(call("submit_finding", finding)), text("Reported."))


def test_an_inspections_finding_reaches_the_summary_channels_of_its_organizations_apps_only(
    org, other_org, agents_llm, fakes
):
    telegram, slack = fakes
    telegram_app(org, telegram, summary_channel="-100777")
    slack_app(org, slack, summary_channel="C-ONCALL")
    telegram_app(org, telegram, name="Quiet bot", webhook_path="quiet")  # no summary channel
    telegram_app(org, telegram, name="Off bot", webhook_path="off", summary_channel="-1", enabled=False)
    slack_app(other_org, slack, name="Their bot", summary_channel="C-THEIRS")
    schedule = make_schedule(org, deliver_to_im=True, open_incidents=False)
    inspection_finds(agents_llm, PROBLEM)

    run = run_once(schedule)

    assert run.state == ScheduleRun.State.FINISHED and run.deliveries["im"] == "posted to 2 channel(s)"
    run_url = f"http://127.0.0.1:8000/schedules/runs/{run.pk}/"
    [sent] = telegram.called("sendMessage")
    assert sent.body["chat_id"] == "-100777"
    assert "<b>disk check: PROBLEM</b>" in sent.body["text"]
    assert "db-01 /var is nearly full." in sent.body["text"] and "91% used" in sent.body["text"]
    assert f'<a href="{run_url}">Run</a>' in sent.body["text"]
    [posted] = slack.called("chat.postMessage")  # nothing for the other organization's C-THEIRS
    assert posted.body["channel"] == "C-ONCALL" and "thread_ts" not in posted.body
    assert "*disk check: PROBLEM*" in posted.body["text"] and f"<{run_url}|Run>" in posted.body["text"]


def test_a_report_is_posted_with_its_figures_and_a_link_to_its_page(org, agents_llm, fakes, settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, public_url="https://ongrid.example.com")
    _, slack = fakes
    slack_app(org, slack, summary_channel="C-ONCALL")
    schedule = make_schedule(
        org, "weekly", kind="report", persona="reporter", period="weekly", prompt="", deliver_to_im=True
    )
    agents_llm.add("reporter", text("A quiet week: nothing caught fire."))

    run = run_once(schedule)

    [posted] = slack.called("chat.postMessage")
    assert posted.body["channel"] == "C-ONCALL"
    assert f"*{run.report}*" in posted.body["text"]
    assert "Incidents opened: 0, resolved: 0" in posted.body["text"]
    assert "A quiet week: nothing caught fire." in posted.body["text"]
    assert f"<https://ongrid.example.com/reports/{run.report.pk}/|Report>" in posted.body["text"]
    assert run.deliveries["im"] == "posted to 1 channel(s)"


def test_a_schedule_without_im_delivery_posts_nothing(org, agents_llm, fakes):
    telegram, slack = fakes
    telegram_app(org, telegram, summary_channel="-100777")
    slack_app(org, slack, summary_channel="C-ONCALL")
    inspection_finds(agents_llm, PROBLEM)

    run = run_once(make_schedule(org, open_incidents=False))

    assert run.state == ScheduleRun.State.FINISHED and run.finding == "problem"
    assert telegram.called("sendMessage") == [] and slack.called("chat.postMessage") == []
    assert "im" not in run.deliveries


def test_a_chat_that_is_down_is_logged_and_the_run_and_the_other_apps_go_on(org, agents_llm, fakes, caplog):
    telegram, slack = fakes
    telegram_app(
        org, telegram, name="A down bot", summary_channel="-100777", api_base_url="http://127.0.0.1:9"
    )
    slack_app(org, slack, summary_channel="C-ONCALL")
    inspection_finds(agents_llm, {"status": "ok", "summary": "All disks below 60 %.", "findings": []})

    run = run_once(make_schedule(org, deliver_to_im=True))

    assert run.state == ScheduleRun.State.FINISHED and run.finding == "ok"
    assert run.deliveries["im"] == "posted to 1 of 2 channel(s); see the server log"
    [posted] = slack.called("chat.postMessage")
    assert "*disk check: OK*" in posted.body["text"] and "All disks below 60 %." in posted.body["text"]
    assert any("could not post the inspection output" in r.getMessage() for r in caplog.records)


def test_an_org_admin_turns_im_delivery_on_in_the_schedules_admin(client, org, org_admin):
    from django.urls import reverse

    from schedules_app.models import Schedule

    client.force_login(org_admin)
    add = reverse("admin:schedules_app_schedule_add")
    assert (
        'name="deliver_to_im"' in client.get(add).content.decode()
        and "IM channel" in client.get(add).content.decode()
    )
    form = {
        "name": "disk to chat",
        "kind": "inspection",
        "enabled": "on",
        "persona": "specialist-disk",
        "prompt": "Check free space.",
        "period": "weekly",
        "cron": "0 7 * * *",
        "timezone": "UTC",
        "deliver_to_im": "on",
    }
    response = client.post(add, form)
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Schedule.objects.get(name="disk to chat").deliver_to_im is True
