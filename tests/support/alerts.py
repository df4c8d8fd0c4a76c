"""Builders for the alert-notification tests: channels and rules, a fixed clock, an IM bridge
stand-in that records the card signals (until the IM side answers them itself), and a wait for
the background drainer."""

from __future__ import annotations

import datetime as dt
import http.server
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pytest

from chat_app.signals import alert_card_post, alert_card_update
from incidents_app.alerting import clock
from incidents_app.models import NotificationChannel, NotificationDelivery, NotificationRule
from ops_app.models import Incident

T0 = dt.datetime(2026, 5, 1, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def fixed_clock(settings):
    """The notifications' clock stands at T0 until the test moves it (`clock.set_now`)."""
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    clock.set_now(T0)
    yield clock
    clock.set_now(None)


def email_channel(org, name: str = "oncall-mail", **fields) -> NotificationChannel:
    values = {"kind": "email", "recipients": "oncall@acme.test, lead@acme.test", **fields}
    return NotificationChannel.objects.create(organization=org, name=name, **values)


def webhook_channel(org, url: str, secret: str = "whsec-test", **fields) -> NotificationChannel:
    return NotificationChannel.objects.create(
        organization=org, name="hook", kind="webhook", webhook_url=url, webhook_secret=secret, **fields
    )


def rule(org, *channels: NotificationChannel, **fields) -> NotificationRule:
    made = NotificationRule.objects.create(organization=org, name=fields.pop("name", "all"), **fields)
    made.channels.set(channels)
    return made


def fire(org, title: str = "Checkout 5xx", severity: str = "critical", **fields) -> Incident:
    """A new firing incident, as an alert source's delivery creates it (committed at once)."""
    values = {"source": "alertmanager", "started_at": T0, "affected_services": ["checkout"], **fields}
    return Incident.objects.create(organization=org, title=title, severity=severity, **values)


def eventually(predicate: Callable[[], object], seconds: float = 15.0, what: str = "the condition"):
    """Poll what the user would look at (a mailbox, a row) until it holds; fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def settled() -> bool:
    """No delivery is due or being sent at the clock's time."""
    rows = NotificationDelivery.objects.filter(status="pending", next_attempt_at__lte=clock.now())
    return not rows.exists() and not NotificationDelivery.objects.filter(claimed_until__isnull=False).exists()


@dataclass
class CardBridge:
    """Stands in for an IM bridge on the card signals: records every card posted or redrawn and
    answers a post with a ref, as the contract in chat_app.signals says."""

    posted: list[dict] = field(default_factory=list)
    updated: list[dict] = field(default_factory=list)
    failing: bool = False

    def post(self, sender, organization_id, app_id, channel, card, **kwargs):
        if self.failing:
            raise ConnectionError("platform down")
        self.posted.append(
            {"organization_id": organization_id, "app_id": app_id, "channel": channel, "card": card}
        )
        return {"channel": channel, "ts": f"1700000000.{len(self.posted):06d}"}

    def update(self, sender, organization_id, app_id, ref, card, **kwargs):
        self.updated.append({"organization_id": organization_id, "app_id": app_id, "ref": ref, "card": card})

    def last_card(self) -> dict:
        return (self.updated or self.posted)[-1]["card"]


@pytest.fixture
def card_bridge():
    """The card signals heard by the recorder only (the IM bridges' receivers are set aside for
    the test; tests/alerts/test_slack_card_end_to_end.py goes through the real one)."""
    bridge = CardBridge()
    kept = {}
    for signal, handler in ((alert_card_post, bridge.post), (alert_card_update, bridge.update)):
        with signal.lock:
            kept[signal], signal.receivers = signal.receivers, []
            signal.sender_receivers_cache.clear()
        signal.connect(handler, weak=False, dispatch_uid="test-card-bridge")
    yield bridge
    for signal, receivers in kept.items():
        with signal.lock:
            signal.receivers = receivers
            signal.sender_receivers_cache.clear()


@dataclass
class FlakyReceiver:
    """A loopback webhook receiver that answers the first `failures` POSTs with 503 (and a body
    that must never be shown), then 204; it records every request with its raw body."""

    url: str = ""
    failures: int = 0
    requests: list[tuple[dict, bytes]] = field(default_factory=list)


@contextmanager
def flaky_receiver(failures: int) -> Iterator[FlakyReceiver]:
    receiver = FlakyReceiver(failures=failures)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            receiver.requests.append((dict(self.headers.items()), body))
            failing = len(receiver.requests) <= receiver.failures
            answer = b"internal secret page: root:x:0:0" if failing else b""
            self.send_response(503 if failing else 204)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/ongrid"
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
