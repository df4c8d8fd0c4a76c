"""Checking that a delivery comes from the source's sender: HMAC signatures over the raw body and
the tokens or basic auth a sender presents. Every comparison is constant-time; the errors say what
was wrong (missing, malformed, no match), never what was expected."""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Iterable, Mapping

from ops_app.alert_sources.events import VerificationFailed
from ops_app.core.encryption import hmac_hex
from ops_app.models import AlertSource


def signature_matches(secret: str, message: bytes, candidates: Iterable[str]) -> bool:
    """True when any candidate (hex, any case) is the HMAC-SHA256 of `message` under `secret`."""
    expected = hmac_hex(secret, message)
    found = False
    for candidate in candidates:  # no early exit: every candidate costs the same
        found |= hmac.compare_digest(expected, candidate.strip().lower())
    return found


def _same(given: str, stored: str) -> bool:
    return hmac.compare_digest(given.encode(), stored.encode())


def bearer(headers: Mapping[str, str]) -> str | None:
    scheme, _, credentials = headers.get("Authorization", "").partition(" ")
    return credentials.strip() or None if scheme.lower() == "bearer" else None


def basic(headers: Mapping[str, str]) -> tuple[str, str] | None:
    scheme, _, credentials = headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, sep, password = base64.b64decode(credentials.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        raise VerificationFailed("the basic-auth credentials are malformed") from None
    return (user, password) if sep else None


def check_credentials(source: AlertSource, headers: Mapping[str, str], token_header: str = "") -> None:
    """The source's token, when it has one: as basic auth when a user name is set, else as a bearer
    token (or in `token_header`, for senders that set custom headers rather than Authorization)."""
    if not source.auth_token:
        return
    if source.auth_username:
        pair = basic(headers)
        if pair is None:
            raise VerificationFailed("no basic-auth credentials: send Authorization: Basic")
        if not (_same(pair[0], source.auth_username) & _same(pair[1], source.auth_token)):
            raise VerificationFailed("wrong basic-auth user name or password")
        return
    given = (headers.get(token_header) if token_header else None) or bearer(headers)
    if not given:
        where = f"{token_header} or Authorization: Bearer" if token_header else "Authorization: Bearer"
        raise VerificationFailed(f"no token: send {where}")
    if not _same(given.strip(), source.auth_token):
        raise VerificationFailed("wrong token")
