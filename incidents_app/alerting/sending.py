"""Sending one claimed delivery to its channel: an IM card through `chat_app.signals` (the IM
bridges post it), an e-mail through Django's mail, or a signed JSON POST under the egress policy.
A failure is recorded as an HTTP status or an error class, never what the remote answered."""

from __future__ import annotations

import contextlib
import json
import logging
import smtplib
from collections.abc import Iterator

import httpx
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.utils import timezone
from django.utils.translation import gettext as _

from chat_app.signals import alert_card_post, alert_card_update
from incidents_app.alerting import cards, clock, outbox
from incidents_app.alerting.models import NotificationChannel, NotificationDelivery
from incidents_app.notify import SIGNATURE_HEADER, sign
from ops_app.core import outbound
from ops_app.core.egress import EgressRefused

log = logging.getLogger(__name__)
WEBHOOK_TIMEOUT = 5.0
Kind = NotificationDelivery.Kind
ChannelKind = NotificationChannel.Kind


class NotSent(Exception):
    """A delivery that cannot go out as it is (no chat app answered, the channel is off)."""


class NoCard(NotSent):
    """An update for a card that was never posted: nothing to redraw."""


class BridgeFailed(NotSent):
    """The IM bridge raised (platform down, app disabled): `reason` is its error's class."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def failure_reason(exc: BaseException) -> str:
    """What the admin and the row may show: the HTTP status, or the error's class name."""
    if isinstance(exc, BridgeFailed):
        return exc.reason
    if isinstance(exc, httpx.HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    return type(exc).__name__


def deliver(row: NotificationDelivery) -> bool:
    """Send the claimed row; record the outcome on it. True when it went out."""
    try:
        if not row.channel.enabled:
            raise NotSent("channel disabled")
        ref = send(row)
    except NoCard as exc:
        outbox.record_failure(row, type(exc).__name__, clock.now(), final=True)
        return False
    except Exception as exc:  # noqa: BLE001 - any failure is one failed attempt, never a lost message
        if not isinstance(exc, (httpx.HTTPError, EgressRefused, smtplib.SMTPException, OSError, NotSent)):
            log.exception("notification %s: unexpected failure", row.pk)
        status = outbox.record_failure(row, failure_reason(exc), clock.now())
        log.warning(
            "notification %s (channel %s) failed: %s, now %s",
            row.pk,
            row.channel_id,
            failure_reason(exc),
            status,
        )
        return False
    outbox.record_sent(row, ref)
    return True


def send(row: NotificationDelivery) -> dict | None:
    """One message for the row's kind; returns the IM card's ref for an alert or digest."""
    if row.kind == Kind.DIGEST:
        return _send_digest(row)
    if row.kind == Kind.UPDATE and row.channel.kind == ChannelKind.IM:
        return _redraw(row)
    drawn = cards.card(row.incident)
    return send_drawn(row.channel, drawn, row.kind)


def send_drawn(channel: NotificationChannel, drawn: dict, kind: str) -> dict | None:
    """Send a drawn card to a channel (also the admin's "Send a test")."""
    if channel.kind == ChannelKind.IM:
        return post_card(channel, drawn)
    if channel.kind == ChannelKind.EMAIL:
        send_mail(channel, drawn, kind)
    else:
        post_webhook(channel, cards.webhook_body(drawn, kind))
    return None


def _send_digest(row: NotificationDelivery) -> dict | None:
    collected = outbox.collected_for(row)
    if not collected:
        return None  # nothing was held back after all
    drawn = cards.digest_card([c.incident for c in collected], row.channel.window_minutes)
    ref = send_drawn(row.channel, drawn, Kind.DIGEST)
    outbox.record_digested(collected)
    return ref


def _redraw(row: NotificationDelivery) -> None:
    posted = outbox.card_of(row)
    if posted is None or posted.status == NotificationDelivery.Status.FAILED:
        raise NoCard
    if posted.ref is None:
        if posted.status == NotificationDelivery.Status.PENDING:
            return None  # the card is not out yet: it will be drawn as things stand when it is
        raise NoCard
    channel = row.channel
    drawn = cards.card(row.incident)
    with bridged():
        alert_card_update.send(
            sender=NotificationDelivery,
            organization_id=channel.organization_id,
            app_id=channel.im_app_id,
            ref=posted.ref,
            card=drawn,
        )
    return None


@contextlib.contextmanager
def bridged() -> Iterator[None]:
    """The IM bridge's failure as one of ours, named by its class (never its text)."""
    try:
        yield
    except NotSent:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the bridge raised is one failed attempt
        raise BridgeFailed(type(exc).__name__) from exc


def post_card(channel: NotificationChannel, drawn: dict) -> dict:
    if channel.im_app_id is None or channel.im_app.organization_id != channel.organization_id:
        raise NotSent("chat app of another organization")
    with bridged():
        answers = alert_card_post.send(
            sender=NotificationDelivery,
            organization_id=channel.organization_id,
            app_id=channel.im_app_id,
            channel=channel.im_channel,
            card=drawn,
        )
    ref = next((answer for _receiver, answer in answers if answer is not None), None)
    if ref is None:
        raise NotSent("no chat bridge posted the card")
    return ref


def send_mail(channel: NotificationChannel, drawn: dict, kind: str) -> None:
    message = EmailMultiAlternatives(
        subject=cards.email_subject(drawn, kind),
        body=cards.email_text(drawn, kind),
        to=channel.recipient_list(),
    )
    message.attach_alternative(cards.email_html(drawn, kind), "text/html")
    message.send(fail_silently=False)


def post_webhook(channel: NotificationChannel, body: dict) -> None:
    raw = json.dumps(body, sort_keys=True).encode()
    headers = {"Content-Type": "application/json"}
    if channel.webhook_secret:
        headers[SIGNATURE_HEADER] = sign(raw, channel.webhook_secret)
    with outbound.client(timeout=WEBHOOK_TIMEOUT) as client:  # under the egress policy
        client.post(channel.webhook_url, content=raw, headers=headers).raise_for_status()


def sample_card() -> dict:
    """What "Send a test" sends: a card that says it is a test and offers no buttons."""
    return {
        "incident": 0,
        "title": _("Test notification from Ongrid"),
        "severity": "info",
        "status": "firing",
        "services": [],
        "started_at": timezone.now().isoformat(),
        "url": f"{settings.CONFIG.public_url}/incidents/",
        "source": "test",
        "source_url": "",
        "findings": _("If you read this, alerts will reach this channel."),
        "report": None,
        "log": [],
        "buttons": [],
    }


def send_test(channel: NotificationChannel) -> str:
    """Send the sample; "" when it went out, else the failure as a status or an error class."""
    try:
        send_drawn(channel, sample_card(), Kind.ALERT)
    except Exception as exc:  # noqa: BLE001 - the admin is told the class, the log has the rest
        log.warning("channel %s: test failed: %s", channel.pk, failure_reason(exc))
        return failure_reason(exc)
    return ""
