"""The notification seam: when an investigation ends, `investigation_finished` is sent (the IM
bridges subscribe to it) and, when the organization set a webhook, a signed JSON body is POSTed.

The signature is `X-Ongrid-Signature: sha256=<hex HMAC-SHA256 of the raw body with the secret>`,
so the receiver can check the body came from Ongrid untouched (docs/investigations.md).
"""

from __future__ import annotations

import json
import logging

import httpx
from django.dispatch import receiver

from chat_app.signals import investigation_finished
from incidents_app.models import Investigation
from incidents_app.policy import policy_for
from ops_app.core import outbound
from ops_app.core.egress import EgressRefused
from ops_app.core.encryption import hmac_hex

log = logging.getLogger(__name__)
WEBHOOK_TIMEOUT = 5.0
SIGNATURE_HEADER = "X-Ongrid-Signature"

# `investigation_finished` lives in chat_app.signals (below this app and the IM bridges, so neither
# imports the other); it is sent once per investigation that reaches a terminal state, with the
# keyword arguments documented there.


def investigation_ended(investigation: Investigation) -> None:
    investigation_finished.send(
        sender=Investigation,
        investigation=investigation,
        organization_id=investigation.organization_id,
        summary=summary_of(investigation),
    )


def summary_of(investigation: Investigation) -> dict:
    """The body other systems receive: enough to post to an on-call channel, nothing secret."""
    report = investigation.report or {}
    return {
        "event": "investigation.finished",
        "investigation": investigation.pk,
        "incident": {
            "id": investigation.incident_id,
            "title": investigation.incident.title,
            "severity": investigation.incident.severity,
            "path": f"/incidents/{investigation.incident_id}/",
        },
        "status": investigation.status,
        "summary": report.get("summary") or investigation.partial_findings[:1000],
        "root_cause": report.get("root_cause", ""),
        "patient_zero": report.get("patient_zero"),
        "confidence": report.get("confidence"),
        "confidence_word": report.get("confidence_word"),
        "error": investigation.error[:500],
    }


def sign(body: bytes, secret: str) -> str:
    return "sha256=" + hmac_hex(secret, body)


@receiver(investigation_finished, dispatch_uid="ongrid-investigation-webhook")
def post_webhook(sender, investigation: Investigation, **kwargs) -> None:
    """Deliver the summary to the organization's webhook; a failure is logged, never raised."""
    policy = policy_for(investigation.organization_id)
    if not policy.webhook_url:
        return
    body = json.dumps(summary_of(investigation), sort_keys=True).encode()
    headers = {"Content-Type": "application/json"}
    if policy.webhook_secret:
        headers[SIGNATURE_HEADER] = sign(body, policy.webhook_secret)
    try:
        with outbound.client(timeout=WEBHOOK_TIMEOUT) as client:  # under the egress policy
            client.post(policy.webhook_url, content=body, headers=headers).raise_for_status()
    except httpx.HTTPError as exc:
        log.warning("investigation %s: webhook delivery failed: %s", investigation.pk, type(exc).__name__)
    except EgressRefused as refused:
        log.warning(
            "investigation %s: webhook refused by the egress policy: %s", investigation.pk, refused.reason
        )
