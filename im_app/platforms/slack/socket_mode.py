"""Slack Socket Mode: the outbound-only way for installations without a public URL, run by
`manage.py ongrid_im` beside Telegram long polling (docs/im.md).

The wire protocol (https://api.slack.com/apis/socket-mode): `apps.connections.open` with the
app-level token gives a one-time websocket URL; the server says `hello`, then sends envelopes
`{"envelope_id", "type": events_api | slash_commands | interactive, "payload", ...}`, each of which
must be acknowledged with `{"envelope_id"}` within three seconds, or Slack redelivers it. The
payloads are the webhooks' bodies, so they go to the same `inbound.accept_*` functions the
webhook views call: acknowledge first, then de-duplicate and start the work. A `disconnect` (Slack
refreshes connections every few hours) means: open a new connection at once.

We speak the protocol with `websockets` rather than slack_sdk's Socket Mode clients: those need
aiohttp for their web client, and reconnect on a fixed ten-second timer without backoff, while
this loop reuses our HTTP client (base URL, 429 handling) and backs off like the Telegram poller.
"""

from __future__ import annotations

import asyncio
import json
import logging

import websockets
from websockets.asyncio.client import ClientConnection

from im_app.background import sleep_unless_stopped, unless_stopped
from im_app.models import IMApp
from im_app.platforms.http import PlatformError
from im_app.platforms.slack import inbound
from im_app.platforms.slack.client import socket_mode_url
from ops_app.core import outbound
from ops_app.core.egress import EgressRefused

log = logging.getLogger(__name__)

MAX_BACKOFF = 60.0
OPEN_TIMEOUT = 15.0


async def serve_app(app: IMApp, stop: asyncio.Event, max_backoff: float = MAX_BACKOFF) -> None:
    """Keep one Socket Mode connection open for `app` until `stop`: reconnect at once when Slack
    asks (`disconnect`), after a growing pause (1 s doubling to `max_backoff`) on a failure. The
    app is re-read before each connection, so a corrected token or a disabled app takes effect
    without a restart. A refusal (a wrong token) is logged with Slack's reason and retried:
    it never ends the process, which serves other apps too."""
    backoff = 1.0
    while not stop.is_set():
        current = await IMApp.objects.filter(pk=app.pk, enabled=True).afirst()
        if current is None:
            log.warning("IM app %s: disabled or deleted; its Socket Mode connection ends", app.pk)
            return
        try:
            reason = await _connection(current, stop)
        except PlatformError as exc:
            log.error("IM app %s: Slack refused Socket Mode (%s); retrying in %.0fs", app.pk, exc, backoff)
        except Exception as exc:  # noqa: BLE001 - network or platform trouble: retry
            log.warning(
                "IM app %s: Socket Mode connection failed (%s); retrying in %.0fs",
                app.pk,
                type(exc).__name__,
                backoff,
            )
        else:
            if stop.is_set():
                return
            backoff = 1.0  # the connection worked: a later failure starts the backoff afresh
            if reason == "disconnect":
                continue  # Slack asked for a fresh connection: no pause
            log.info("IM app %s: Socket Mode connection %s; reconnecting in %.0fs", app.pk, reason, backoff)
        await sleep_unless_stopped(backoff, stop)
        backoff = min(backoff * 2, max_backoff)


async def _connection(app: IMApp, stop: asyncio.Event) -> str:
    """One connection, from `apps.connections.open` to its end: "disconnect" when Slack asked
    for a new one, "closed" when the socket closed cleanly (by Slack, or by us on `stop`),
    "dropped" when an open connection broke (no close handshake, or no answer to pings)."""
    url = await unless_stopped(socket_mode_url(app), stop)
    if url is None:
        return "closed"
    try:  # the URL is the answer of the app's API base: it obeys the egress policy like a request
        address = await outbound.websocket_address(url)
    except EgressRefused as refused:
        raise PlatformError(
            f"the Socket Mode URL is refused by the egress policy: {refused.reason}"
        ) from refused
    # Connect to the checked address; the URL's host name stays the Host header and the TLS name.
    connecting = websockets.connect(url, host=address, proxy=None, open_timeout=OPEN_TIMEOUT, max_size=2**22)
    async with connecting as socket:
        closer = asyncio.ensure_future(_close_on(stop, socket))
        try:
            async for raw in socket:
                message = json.loads(raw)
                kind = message.get("type")
                if kind == "hello":
                    log.info("IM app %s: Socket Mode connected", app.pk)
                elif kind == "disconnect":
                    log.info("IM app %s: Slack asked to reconnect (%s)", app.pk, message.get("reason", ""))
                    return "disconnect"
                elif message.get("envelope_id"):
                    await _envelope(app, socket, message)
        except websockets.ConnectionClosedError:
            return "dropped"
        finally:
            closer.cancel()
    return "closed"


async def _close_on(stop: asyncio.Event, socket: ClientConnection) -> None:
    """A clean close (1000) when the process stops, rather than a cancelled read."""
    await stop.wait()
    await socket.close()


async def _envelope(app: IMApp, socket: ClientConnection, envelope: dict) -> None:
    """Acknowledge first (Slack's three seconds), then hand the payload to the same code as the
    webhook's. A slash command's acknowledgement carries what the webhook would have answered."""
    kind, payload = envelope.get("type"), envelope.get("payload") or {}
    ack: dict = {"envelope_id": envelope["envelope_id"]}
    if kind == "slash_commands" and envelope.get("accepts_response_payload"):
        ack["payload"] = {
            "response_type": "ephemeral",
            "text": await inbound.acommand_answer(app, payload),
        }
    await socket.send(json.dumps(ack))
    try:
        if kind == "events_api":
            await inbound.accept_event(app, payload)
        elif kind == "interactive":
            inbound.accept_interaction(app, payload)
        elif kind == "slash_commands":
            await inbound.accept_command(app, payload)
        else:
            log.info("IM app %s: ignored a Socket Mode envelope of type %s", app.pk, kind)
    except Exception as exc:  # noqa: BLE001 - e.g. the database is down: the connection goes on
        # Acknowledged already, so Slack will not redeliver it, and a new connection would not help.
        log.error("IM app %s: a Socket Mode %s envelope failed (%s)", app.pk, kind, type(exc).__name__)


async def check(app: IMApp) -> str:
    """The admin's Test connection, second step for an app in Socket Mode: the app-level token is
    tried (`apps.connections.open`; the one-time URL it answers is simply not used)."""
    try:
        await socket_mode_url(app)
    except PlatformError as exc:
        raise PlatformError(f"Socket Mode refused the app-level token: {exc.safe_reason()}") from exc
    return "Socket Mode ready"
