"""What the paging tools' REST clients share (`<kind>/api.py`): one request under the egress
policy, and one exception for every way it can fail that carries only the HTTP status or the
error's class name, so nothing a vendor answers (or the key sent to it) reaches a log, a row or
a person."""

from __future__ import annotations

from typing import Any

import httpx

from ops_app.core import outbound
from ops_app.core.egress import EgressRefused
from ops_app.models import AlertSource

TIMEOUT = 10.0
# What a failure says when no request was made at all.
NOT_CONFIGURED = "NotConfigured"
REFUSED = "EgressRefused"


class SourceAPIError(Exception):
    """A write to a source's API failed. `reason` is "HTTP 503", an error class name such as
    "ConnectError", or "EgressRefused"; `transient` says whether trying again later may work."""

    def __init__(self, reason: str, *, status: int | None = None, transient: bool = True) -> None:
        super().__init__(reason)
        self.reason, self.status, self.transient = reason, status, transient

    @property
    def refused(self) -> bool:
        return self.reason == REFUSED


def base_of(source: AlertSource) -> str:
    """The source's API base, or a (permanent) failure when it has none or no key."""
    base = source.api_base()
    if not base or not source.api_key:
        raise SourceAPIError(NOT_CONFIGURED, transient=False)
    return base


async def send(
    method: str, url: str, *, headers: dict[str, str], body: dict, params: dict | None = None
) -> Any:
    """One JSON request; the decoded answer (or {}) of a 2xx, else SourceAPIError. A 429 or 5xx
    and network failures are transient; another 4xx (a wrong key, an unknown incident) and a
    refusal by the egress policy are not: retrying would not change them."""
    try:
        async with outbound.async_client(timeout=TIMEOUT) as client:
            response = await client.request(method, url, headers=headers, json=body, params=params)
    except Exception as error:  # noqa: BLE001 - every failure becomes the one exception below
        if outbound.cause_of(error, EgressRefused) is not None:
            raise SourceAPIError(REFUSED, transient=False) from None
        if isinstance(error, (httpx.HTTPError, OSError)):
            raise SourceAPIError(type(error).__name__) from None
        raise
    status = response.status_code
    if status >= 300:
        transient = status == 429 or status >= 500
        raise SourceAPIError(f"HTTP {status}", status=status, transient=transient)
    try:
        return response.json()
    except ValueError:
        return {}
