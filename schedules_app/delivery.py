"""Where a run's output goes besides the web (which always has it: the run and report pages).

Each destination is a function `(schedule, message) -> str` registered in `DESTINATIONS`; it
returns a short outcome ("sent to 2 recipients") or raises `DeliveryError`. One destination
failing never stops the others.

IM channels: `schedules_app` never imports the IM bridges (sibling apps), so the "im" destination
sends `chat_app.signals.schedule_delivered` and the bridges' receiver posts the summary to each
enabled IM app's summary channel of the schedule's organization (docs/im.md).

Webhooks carry JSON signed with HMAC-SHA256 over the exact body bytes, in the header
`X-Ongrid-Signature: sha256=<hex>`; the secret is the schedule's encrypted `webhook_secret`.
They go out under the egress policy (docs/security.md, "Egress"); the outcome is the status or
a short reason, never the receiver's answer.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.conf import settings
from django.core.mail import send_mail
from django.utils import translation

from chat_app.signals import schedule_delivered
from ops_app.core import outbound
from ops_app.core.egress import EgressRefused
from ops_app.core.encryption import hmac_hex
from ops_app.models import Membership
from schedules_app.models import Schedule

log = logging.getLogger(__name__)

SIGNATURE_HEADER = "X-Ongrid-Signature"
WEBHOOK_TIMEOUT = 10.0


class DeliveryError(Exception):
    """A destination refused or could not be reached; the message is safe to show."""


@dataclass
class Message:
    subject: str
    text: str  # plain text, for e-mail and IM
    payload: dict[str, Any] = field(default_factory=dict)  # for the webhook
    # For IM: a one-line title, a short Markdown summary, the run's or report's page, its status.
    title: str = ""
    markdown: str = ""
    url: str = ""
    status: str = ""
    kind: str = ""
    # The e-mail's (subject, text) in the active language; called once per recipients' language.
    # None: `subject` and `text` as they are.
    email: Callable[[], tuple[str, str]] | None = None
    # The IM copy's (title, markdown) in the active language, called once per IM app's language.
    # None: `title` and `markdown` as they are.
    im: Callable[[], tuple[str, str]] | None = None


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac_hex(secret, body)


def verify(secret: str, body: bytes, header: str) -> bool:
    """What a receiver does: recompute the signature over the raw body, compare in constant time."""
    return hmac.compare_digest(sign(secret, body), header or "")


def recipient_languages(schedule: Schedule) -> dict[str, list[str]]:
    """{language: addresses}: an address of a user of the schedule's organization gets that user's
    language setting (docs/i18n.md), any other address the default language (English). Users of
    other organizations are never looked at."""
    recipients = schedule.recipients
    chosen: dict[str, str] = {}
    members = Membership.objects.filter(organization_id=schedule.organization_id).exclude(language="")
    for email, language in members.values_list("user__email", "language"):
        if email:
            chosen.setdefault(email.lower(), language)
    groups: dict[str, list[str]] = {}
    for address in recipients:
        groups.setdefault(chosen.get(address.lower(), settings.LANGUAGE_CODE), []).append(address)
    return groups


def _email(schedule: Schedule, message: Message) -> str:
    """One e-mail per language among the recipients, each written in that language."""
    groups = recipient_languages(schedule)
    for language, addresses in groups.items():
        with translation.override(language):
            subject, text = message.email() if message.email else (message.subject, message.text)
        send_mail(subject, text, settings.DEFAULT_FROM_EMAIL, addresses, fail_silently=False)
    return f"sent to {sum(len(addresses) for addresses in groups.values())} recipient(s)"


def _webhook(schedule: Schedule, message: Message) -> str:
    body = json.dumps(message.payload, sort_keys=True, separators=(",", ":")).encode()
    headers = {"Content-Type": "application/json", "User-Agent": "Ongrid-Schedules"}
    if schedule.webhook_secret:
        headers[SIGNATURE_HEADER] = sign(schedule.webhook_secret, body)
    try:
        with outbound.client(timeout=WEBHOOK_TIMEOUT) as client:  # under the egress policy
            response = client.post(schedule.webhook_url, content=body, headers=headers)
    except httpx.HTTPError as exc:
        raise DeliveryError(f"webhook unreachable: {type(exc).__name__}") from None
    except EgressRefused as refused:
        log.warning("schedule %s: webhook refused by the egress policy: %s", schedule.pk, refused.reason)
        raise DeliveryError(f"webhook refused by the egress policy: {refused.reason}") from None
    if response.status_code >= 300:
        raise DeliveryError(f"webhook answered HTTP {response.status_code}")
    return f"HTTP {response.status_code}"


def _im(schedule: Schedule, message: Message) -> str:
    """Hand the summary to whichever IM bridges listen; a receiver that raises is a failed delivery."""
    answers = schedule_delivered.send_robust(
        sender=Schedule,
        organization_id=schedule.organization_id,
        kind=message.kind or schedule.kind,
        title=message.title or message.subject,
        markdown=message.markdown or message.text,
        url=message.url,
        status=message.status,
        compose=message.im,
    )
    if not answers:
        raise DeliveryError("no IM bridge is installed")
    failures = [answer for _, answer in answers if isinstance(answer, Exception)]
    for failure in failures:
        log.warning("IM delivery of schedule %s failed: %s", schedule.pk, type(failure).__name__)
    outcomes = [str(answer) for _, answer in answers if answer and not isinstance(answer, Exception)]
    outcomes += [f"failed: {type(failure).__name__}" for failure in failures]
    return "; ".join(outcomes) or "nothing to post"


# name -> (is it configured for this schedule?, send)
DESTINATIONS: dict[str, tuple[Callable[[Schedule], bool], Callable[[Schedule, Message], str]]] = {
    "email": (lambda s: bool(s.recipients), _email),
    "webhook": (lambda s: bool(s.webhook_url), _webhook),
    "im": (lambda s: s.deliver_to_im, _im),
}


def deliver(schedule: Schedule, message: Message) -> dict[str, str]:
    """Send `message` to every destination the schedule has; {destination: outcome}."""
    outcomes = {"web": "stored"}
    for name, (configured, send) in DESTINATIONS.items():
        if not configured(schedule):
            continue
        try:
            outcomes[name] = send(schedule, message)
        except DeliveryError as exc:
            outcomes[name] = f"failed: {exc}"
        except Exception as exc:  # noqa: BLE001 - e.g. SMTP refused: record it, deliver the rest
            log.warning("delivery of schedule %s to %s failed: %s", schedule.pk, name, type(exc).__name__)
            outcomes[name] = f"failed: {type(exc).__name__}"
    return outcomes
