"""Readiness checks behind /healthz. Each check returns (ok, detail) and never raises, so one
broken dependency is reported by name instead of turning the endpoint into a 500."""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from kombu import Connection

CHECK_TIMEOUT = 3.0


def _database_sync() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return connection.vendor


async def check_database() -> tuple[bool, str]:
    try:
        vendor = await asyncio.wait_for(sync_to_async(_database_sync)(), CHECK_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - every failure is a health finding
        return False, _reason(exc)
    return True, vendor


async def check_channel_layer() -> tuple[bool, str]:
    """A message sent to a fresh channel must come back: proves the layer really carries traffic."""
    layer = get_channel_layer()
    if layer is None:
        return False, "no channel layer configured"
    try:
        async with asyncio.timeout(CHECK_TIMEOUT):
            channel = await layer.new_channel("healthz.")
            await layer.send(channel, {"type": "healthz.ping"})
            message = await layer.receive(channel)
    except Exception as exc:  # noqa: BLE001
        return False, _reason(exc)
    if message.get("type") != "healthz.ping":
        return False, f"unexpected message {message!r}"
    return True, type(layer).__name__


def _broker_sync(url: str) -> None:
    with Connection(url, connect_timeout=CHECK_TIMEOUT) as conn:
        conn.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT)


async def check_broker() -> tuple[bool, str] | None:
    url = settings.CONFIG.redis_url
    if not url:
        return None
    try:
        await asyncio.wait_for(asyncio.to_thread(_broker_sync, url), CHECK_TIMEOUT * 2)
    except Exception as exc:  # noqa: BLE001
        return False, _reason(exc)
    return True, "celery broker reachable"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return f"timed out after {CHECK_TIMEOUT:g}s"
    return f"{type(exc).__name__}: {exc}"[:300]


async def run_checks() -> tuple[bool, dict]:
    database, layer, broker = await asyncio.gather(check_database(), check_channel_layer(), check_broker())
    checks = {"database": database, "channel_layer": layer}
    if broker is not None:
        checks["broker"] = broker
    report = {name: {"ok": ok, "detail": detail} for name, (ok, detail) in checks.items()}
    return all(ok for ok, _ in checks.values()), report
