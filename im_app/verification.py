"""Is this delivery really from the platform? Each check compares in constant time and never logs
the secret it compares against."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

from im_app.models import IMApp
from im_app.platforms.feishu import decrypt

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


def feishu_token_ok(app: IMApp, token: str) -> bool:
    """The verification token Feishu puts in every event (`header.token`, or `token` in v1 bodies)."""
    expected = app.verification_token or ""
    return bool(expected) and hmac.compare_digest(expected.encode(), (token or "").encode())


def feishu_signature_ok(app: IMApp, timestamp: str, nonce: str, body: bytes, signature: str) -> bool:
    """`X-Lark-Signature`: hex SHA-256 of timestamp + nonce + encrypt key + raw body."""
    key = app.encrypt_key or ""
    digest = hashlib.sha256(timestamp.encode() + nonce.encode() + key.encode() + body).hexdigest()
    return hmac.compare_digest(digest.encode(), signature.encode())


def feishu_payload(app: IMApp, body: bytes, headers) -> dict | None:
    """The event a Feishu request carries, or None when it is not from Feishu for this app: an app
    with an encrypt key accepts only encrypted bodies (and checks `X-Lark-Signature` when sent);
    every payload must carry the app's verification token."""
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    if app.encrypt_key:
        signature = headers.get("X-Lark-Signature", "")
        timestamp = headers.get("X-Lark-Request-Timestamp", "")
        nonce = headers.get("X-Lark-Request-Nonce", "")
        if signature and not feishu_signature_ok(app, timestamp, nonce, body, signature):
            return None
        if not isinstance(payload.get("encrypt"), str):
            return None
        try:
            payload = decrypt(payload["encrypt"], app.encrypt_key)
        except (ValueError, UnicodeDecodeError):
            return None
        if not isinstance(payload, dict):
            return None
    token = (payload.get("header") or {}).get("token") or payload.get("token") or ""
    return payload if feishu_token_ok(app, token) else None
