"""Each kind of channel, as its receiver sees it: the signed webhook (retried with backoff after
failures, every attempt recorded on the delivery row, never the remote's body), the e-mail
(subject, plain text and HTML, absolute links to the incident and its source), and the admin's
"Send a test" and write-only secret; a channel cannot use another organization's chat app."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import json

import pytest
from django.core import mail
from django.core.exceptions import ValidationError

from im_app.models import IMApp
from incidents_app.alerting import drain
from incidents_app.models import NotificationChannel, NotificationDelivery
from ops_app.models import AlertSource
from tests.support.alerts import (
    T0,
    email_channel,
    eventually,
    fire,
    flaky_receiver,
    rule,
    settled,
    webhook_channel,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("inline_executor", "fixed_clock"),
]


def delivery() -> NotificationDelivery:
    return NotificationDelivery.objects.get(kind="alert")


def signature_of(body: bytes, secret: str = "whsec-test") -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def test_a_webhook_is_signed_and_retried_with_backoff_until_it_is_taken(org, fixed_clock, settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, public_url="https://ongrid.acme.test")
    with flaky_receiver(failures=2) as receiver:
        rule(org, webhook_channel(org, receiver.url))
        incident = fire(org, "Checkout 5xx", external_url="https://acme.pagerduty.com/incidents/Q1")
        first = eventually(lambda: delivery().attempts == 1 and delivery(), what="the first attempt")
        assert (first.status, first.last_error) == ("pending", "HTTP 503")
        assert first.next_attempt_at == T0 + dt.timedelta(seconds=30)

        fixed_clock.set_now(T0 + dt.timedelta(seconds=29))
        assert drain.drain_once() == 0  # not due yet
        fixed_clock.set_now(T0 + dt.timedelta(seconds=30))
        drain.drain_once()
        second = eventually(lambda: delivery().attempts == 2 and delivery(), what="the second attempt")
        assert second.next_attempt_at == T0 + dt.timedelta(seconds=90)  # the pause doubled

        fixed_clock.set_now(T0 + dt.timedelta(seconds=90))
        drain.drain_once()
        done = eventually(lambda: delivery().status == "sent" and delivery(), what="the delivery")
    assert (done.attempts, done.last_error, done.sent_at) == (3, "", T0 + dt.timedelta(seconds=90))
    assert len(receiver.requests) == 3
    for headers, body in receiver.requests:
        assert headers["X-Ongrid-Signature"] == signature_of(body)
    sent = json.loads(receiver.requests[-1][1])
    assert sent["event"] == "alert.fired"
    card = sent["incident"]
    assert (card["incident"], card["title"], card["severity"], card["services"]) == (
        incident.pk,
        "Checkout 5xx",
        "critical",
        ["checkout"],
    )
    assert card["url"] == f"https://ongrid.acme.test/incidents/{incident.pk}/"
    assert card["source_url"] == "https://acme.pagerduty.com/incidents/Q1"
    assert card["buttons"] == ["acknowledge", "investigate", "silence"]


def test_a_delivery_that_keeps_failing_is_failed_after_its_last_attempt(org, fixed_clock):
    with flaky_receiver(failures=100) as receiver:
        rule(org, webhook_channel(org, receiver.url))
        fire(org)
        eventually(lambda: delivery().attempts == 1, what="the first attempt")
        moment = T0
        for _ in range(7):
            moment += dt.timedelta(minutes=16)  # past any pause
            fixed_clock.set_now(moment)
            drain.drain_once()
        final = eventually(lambda: delivery().status == "failed" and delivery(), what="the failure")
    assert (final.attempts, final.last_error) == (8, "HTTP 503")
    assert len(receiver.requests) == 8


def test_a_webhook_the_egress_policy_refuses_is_recorded_by_class(org, settings):
    channel = webhook_channel(org, "http://127.0.0.1:9/hook")
    NotificationChannel.objects.filter(pk=channel.pk).update(
        webhook_url="http://169.254.169.254/latest/meta-data"
    )
    rule(org, channel)
    fire(org)
    row = eventually(lambda: delivery().attempts == 1 and delivery(), what="the attempt")
    assert row.last_error == "EgressRefused"


def test_the_mail_names_the_alert_and_links_to_the_incident_and_its_source(org, settings):
    source = AlertSource.objects.create(organization=org, name="pd", kind="pagerduty")
    rule(org, email_channel(org))
    incident = fire(
        org,
        "Payments API latency",
        severity="high",
        source="pagerduty",
        alert_source=source,
        affected_services=["payments", "api"],
        external_url="https://acme.pagerduty.com/incidents/Q2",
    )
    sent = eventually(lambda: mail.outbox and mail.outbox[0], what="the mail")
    public = settings.CONFIG.public_url
    assert sent.subject == "[Ongrid] HIGH: Payments API latency"
    assert "Services: payments, api" in sent.body
    assert "Source: pagerduty" in sent.body
    assert f"Incident: {public}/incidents/{incident.pk}/" in sent.body
    assert "In the source: https://acme.pagerduty.com/incidents/Q2" in sent.body
    assert f"Started: {T0.isoformat()}" in sent.body
    html, kind = sent.alternatives[0]
    assert kind == "text/html" and "<h2>Payments API latency</h2>" in html
    assert f"{public}/incidents/{incident.pk}/" in html


def test_the_admins_send_a_test_says_sent_or_the_status_never_the_remote_body(client, org, org_admin):
    client.force_login(org_admin)
    with flaky_receiver(failures=1) as receiver:
        channel = webhook_channel(org, receiver.url)
        url = "/admin/incidents_app/notificationchannel/"
        failed = client.post(url, {"action": "send_test", "_selected_action": [channel.pk]}, follow=True)
        shown = [str(m) for m in failed.context["messages"]]
        assert shown == ["hook: failed: HTTP 503"]
        assert "root:x:0:0" not in failed.content.decode()
        worked = client.post(url, {"action": "send_test", "_selected_action": [channel.pk]}, follow=True)
        assert [str(m) for m in worked.context["messages"]] == ["hook: sent"]
        headers, body = receiver.requests[-1]
    assert headers["X-Ongrid-Signature"] == signature_of(body)
    assert json.loads(body)["incident"]["title"] == "Test notification from Ongrid"
    assert not NotificationDelivery.objects.exists()  # a test is not a delivery


def test_the_webhook_secret_is_write_only_in_the_admin(client, org, org_admin):
    client.force_login(org_admin)
    channel = webhook_channel(org, "http://127.0.0.1:9/hook", secret="s3cret-never-shown")
    url = f"/admin/incidents_app/notificationchannel/{channel.pk}/change/"
    form = client.get(url).content.decode()
    assert "s3cret-never-shown" not in form
    saved = client.post(
        url,
        {
            "name": "renamed",
            "kind": "webhook",
            "enabled": "on",
            "webhook_url": "http://127.0.0.1:9/hook",
            "webhook_secret": "",
            "max_messages": 10,
            "window_minutes": 10,
            "recipients": "",
            "im_channel": "",
        },
    )
    assert saved.status_code == 302, saved.content.decode()[:2000]
    channel.refresh_from_db()
    assert (channel.name, channel.webhook_secret) == ("renamed", "s3cret-never-shown")


def test_a_channel_cannot_post_with_another_organizations_chat_app(org, other_org):
    theirs = IMApp.objects.create(organization=other_org, platform="slack", name="Globex bot")
    channel = NotificationChannel(organization=org, name="c", kind="im", im_app=theirs, im_channel="C1")
    with pytest.raises(ValidationError) as refused:
        channel.full_clean()
    assert "im_app" in refused.value.message_dict


def test_the_deliveries_list_is_read_only_and_the_organizations_own(client, org, other_org, org_admin):
    rule(org, email_channel(org))
    rule(other_org, email_channel(other_org, "globex-mail"))
    fire(org, "Acme down")
    fire(other_org, "Globex down")
    eventually(lambda: len(mail.outbox) == 2 and settled(), what="both mails")
    client.force_login(org_admin)
    listing = client.get("/admin/incidents_app/notificationdelivery/").content.decode()
    assert "oncall-mail" in listing and "globex-mail" not in listing
    assert client.get("/admin/incidents_app/notificationdelivery/add/").status_code == 403


def test_the_rule_form_offers_only_the_organizations_channels_and_sources(client, org, other_org, org_admin):
    email_channel(org, "acme-mail")
    email_channel(other_org, "globex-mail")
    AlertSource.objects.create(organization=org, name="pd-acme", kind="pagerduty")
    AlertSource.objects.create(organization=other_org, name="pd-globex", kind="pagerduty")
    client.force_login(org_admin)
    form = client.get("/admin/incidents_app/notificationrule/add/").content.decode()
    assert "acme-mail" in form and "pd-acme" in form
    assert "globex-mail" not in form and "pd-globex" not in form
    channel_form = client.get("/admin/incidents_app/notificationchannel/add/")
    assert channel_form.status_code == 200
