"""Readiness checks behind /healthz. Each check returns (ok, detail) and never raises, so one
broken dependency is reported by name instead of turning the endpoint into a 500.

Every check is bounded by CHECK_TIMEOUT for the whole request. The blocking probes (the database,
the broker) run in a thread of their own that the request stops waiting for at the timeout: never
Django's thread-sensitive thread, which other requests' middleware and signals also need, and
never the connection pool, whose getconn waits up to 30 s while PostgreSQL is down. A probe still
running when the next request comes is joined rather than started again, so probes repeated
during an outage never pile up threads."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable

from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connections
from kombu import Connection

CHECK_TIMEOUT = 3.0

_probes: dict[str, concurrent.futures.Future] = {}
_probes_lock = threading.Lock()


def _probe(name: str, work: Callable[[], str]) -> concurrent.futures.Future:
    """The running probe `name`, or a new one started in a daemon thread."""
    with _probes_lock:
        running = _probes.get(name)
        if running is not None and not running.done():
            return running
        future: concurrent.futures.Future = concurrent.futures.Future()
        future.set_running_or_notify_cancel()  # a caller giving up cannot cancel it: others share it
        _probes[name] = future

    def run() -> None:
        try:
            future.set_result(work())
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            future.set_exception(exc)

    threading.Thread(target=run, name=f"healthz-{name}", daemon=True).start()
    return future


async def _bounded(name: str, work: Callable[[], str]) -> tuple[bool, str]:
    try:
        detail = await asyncio.wait_for(asyncio.wrap_future(_probe(name, work)), CHECK_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - every failure is a health finding
        return False, _reason(exc)
    return True, detail


def _database_probe() -> str:
    """SELECT 1 on a connection of its own, opened with a connect timeout and closed at once."""
    database = connections["default"]
    if database.vendor == "postgresql":
        import psycopg

        params = database.get_connection_params()
        for key in ("cursor_factory", "context", "prepare_threshold"):
            params.pop(key, None)
        limit = max(1, round(CHECK_TIMEOUT))
        with psycopg.connect(**params, connect_timeout=limit, autocommit=True) as conn:
            conn.execute(f"SET statement_timeout = {limit * 1000}")
            conn.execute("SELECT 1").fetchone()
        return database.vendor
    wrapper = connections.create_connection("default")
    try:
        with wrapper.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    finally:
        wrapper.close()
    return database.vendor


async def check_database() -> tuple[bool, str]:
    return await _bounded("database", _database_probe)


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


def _broker_probe(url: str) -> str:
    with Connection(url, connect_timeout=CHECK_TIMEOUT) as conn:
        conn.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT)
    return "celery broker reachable"


async def check_broker() -> tuple[bool, str] | None:
    url = settings.CONFIG.redis_url
    if not url:
        return None
    return await _bounded(f"broker {url}", lambda: _broker_probe(url))


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
