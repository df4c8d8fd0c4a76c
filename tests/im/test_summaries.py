"""Investigation summaries in the team chat, end to end: an Alertmanager alert → an investigation
run by the fake model → the summary posted to each enabled IM app's summary channel of that
organization (and nowhere else), with a link to the incident page."""

from __future__ import annotations

import pytest

from fakes.slack_api import FakeSlack
from fakes.telegram_api import FakeTelegram
from incidents_app.models import Investigation
from tests.incidents.test_investigations import deliver
from tests.support.im import slack_app, telegram_app
from tests.support.investigations import (
    INVESTIGATOR,
    answer,
    enable_auto,
    read_incident,
    report,
    submit,
    wait_finished,
)
from tests.support.procs import wait_until

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def fakes():
    telegram, slack = FakeTelegram().start(), FakeSlack().start()
    yield telegram, slack
    telegram.stop()
    slack.stop()


def test_a_finished_investigation_is_summarised_in_each_apps_channel_of_its_organization(
    settings, agents_llm, org, other_org, fakes
):
    from ops_app.models import AlertmanagerReceiver, Device

    telegram, slack = fakes
    enable_auto(settings)
    Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    telegram_app(org, telegram, summary_channel="-100777")
    slack_app(org, slack, summary_channel="C-ONCALL")
    telegram_app(org, telegram, name="Quiet bot", webhook_path="quiet")  # no summary channel
    telegram_app(org, telegram, name="Off bot", webhook_path="off", summary_channel="-1", enabled=False)
    slack_app(other_org, slack, name="Their bot", summary_channel="C-THEIRS")
    agents_llm.add(
        INVESTIGATOR, read_incident(), submit(report({"kind": "device", "name": "db-01"})), answer()
    )
    receiver = AlertmanagerReceiver.objects.create(organization=org)
    from django.test import Client

    incident = deliver(Client(), receiver)
    investigation = wait_finished(Investigation.objects.get(incident=incident).pk)

    assert investigation.status == "done", investigation.error
    # Apps are served in name order: once the Slack app (the last with a channel) has posted,
    # every earlier one has been served too.
    wait_until(lambda: slack.called("chat.postMessage"), 20, "the Slack summary")
    [sent] = telegram.called("sendMessage")
    assert sent.body["chat_id"] == "-100777" and sent.body["parse_mode"] == "HTML"
    assert "<b>Investigation done: " in sent.body["text"] and "(critical)" in sent.body["text"]
    assert "Root cause: db-01 stopped answering" in sent.body["text"]
    assert f'<a href="http://127.0.0.1:8000/incidents/{incident.pk}/">Incident</a>' in sent.body["text"]
    [posted] = slack.called("chat.postMessage")
    assert posted.body["channel"] == "C-ONCALL" and "thread_ts" not in posted.body
    assert f"<http://127.0.0.1:8000/incidents/{incident.pk}/|Incident>" in posted.body["text"]
