"""Is this delivery really from the platform? Each check compares in constant time and never logs
the secret it compares against."""

from __future__ import annotations

import hashlib
import hmac
import time

from im_app.models import IMApp

SLACK_WINDOW = 300  # seconds: Slack's documented replay window


def telegram_secret_ok(app: IMApp, header: str) -> bool:
    expected = app.webhook_secret or ""
    return bool(expected) and hmac.compare_digest(expected.encode(), header.encode())


def slack_signature_ok(
    app: IMApp, timestamp: str, body: bytes, signature: str, now: float | None = None
) -> bool:
    """`v0=` HMAC-SHA256 of `v0:<timestamp>:<body>` with the signing secret, within five minutes."""
    secret = app.signing_secret or ""
    if not secret or not timestamp.isdigit():
        return False
    if abs((now or time.time()) - int(timestamp)) > SLACK_WINDOW:
        return False
    digest = hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(f"v0={digest}".encode(), signature.encode())
