"""The one HTTP call every platform client makes: JSON in, JSON out, and a rate-limit answer (429)
retried after the delay the platform asked for, a bounded number of times.

Telegram puts the delay in the body (`parameters.retry_after`), Slack in the `Retry-After`
header, Feishu in `x-ogw-ratelimit-reset`; all are read here, so no client can forget to honour them.
Every call goes out under the egress policy (docs/security.md, "Egress"): a base URL the policy
refuses is a PlatformError like any refusal, so every caller already handles it.
"""

from __future__ import annotations

import asyncio
import logging
import re

import httpx

from ops_app.core import outbound
from ops_app.core.egress import EgressRefused

log = logging.getLogger(__name__)

MAX_RATE_LIMIT_RETRIES = 3
LONGEST_WAIT = 60.0
TIMEOUT = httpx.Timeout(15.0, read=70.0)  # long polling holds a read for up to 50 s


ERROR_CODE = re.compile(r"[A-Za-z0-9_.-]{1,60}")


class PlatformError(Exception):
    """The platform refused a call; the message is the platform's own description (never a token).
    `status` is the HTTP status of the answer when the refusal was an HTTP one (a 503 of a platform
    that is down), so callers can tell "unreachable" from "refused" without reading the text.
    `call` names the call (our words) and `code` is the platform's machine error code when it
    sends one (Slack's `error`, Feishu's numeric `code`): what `safe_reason` may show an admin."""

    def __init__(self, message: str, status: int | None = None, *, call: str = "", code: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.call = call
        self.code = str(code)

    def safe_reason(self) -> str:
        """The refusal as an admin may read it: our own words when the platform never answered
        (no status: a missing token, the egress policy), else the call with the platform's error
        code (an identifier, never free text) or the HTTP status alone. Telegram's and Feishu's
        descriptions are the remote server's prose, so they are never part of it."""
        if self.status is None:
            return str(self)
        call = self.call or "call"
        if ERROR_CODE.fullmatch(self.code):
            return f"{call}: {self.code}"
        return f"{call}: HTTP {self.status}"


def retry_after(response: httpx.Response) -> float:
    """Seconds a 429 asks us to wait: the header, else Telegram's body field, else one second."""
    # Feishu names its reset delay x-ogw-ratelimit-reset.
    header = response.headers.get("Retry-After", "") or response.headers.get("x-ogw-ratelimit-reset", "")
    try:
        if header:
            return min(float(header), LONGEST_WAIT)
        body = response.json()
        return min(float((body.get("parameters") or {}).get("retry_after", 1)), LONGEST_WAIT)
    except (ValueError, AttributeError):
        return 1.0


async def send(
    method: str,
    url: str,
    *,
    json: dict | None = None,
    data: dict | None = None,
    headers: dict | None = None,
    what: str = "",
) -> httpx.Response:
    """One request, retried after each 429 as the platform asks. `what` names the call in logs
    (the URL may hold a bot token, so it is never logged)."""
    async with outbound.async_client(timeout=TIMEOUT) as client:  # under the egress policy
        for attempt in range(MAX_RATE_LIMIT_RETRIES + 1):
            try:
                response = await client.request(method, url, json=json, data=data, headers=headers)
            except EgressRefused as refused:
                raise PlatformError(
                    f"{what or method}: refused by the egress policy: {refused.reason}"
                ) from refused
            if response.status_code != 429 or attempt == MAX_RATE_LIMIT_RETRIES:
                return response
            wait = retry_after(response)
            log.info("%s rate-limited: retrying in %.1fs", what or method, wait)
            await asyncio.sleep(wait)
    return response  # pragma: no cover - the loop always returns
