"""Helpers for the schedule tests: schedules with a known timetable, and a webhook receiver."""

from __future__ import annotations

import datetime as dt
import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from schedules_app import scheduler
from schedules_app.models import Schedule


def make_schedule(org, name: str = "disk check", *, now: dt.datetime | None = None, **fields) -> Schedule:
    """An enabled schedule whose next run is computed from `now` (default: an hourly cron)."""
    values = {"kind": Schedule.Kind.INSPECTION, "persona": "specialist-disk", "cron": "0 * * * *"}
    values["prompt"] = "Check free space on every db host; flag anything over 85 %."
    values.update(fields)
    schedule = Schedule.objects.create(organization=org, name=name, **values)
    scheduler.reschedule(schedule, now or dt.datetime(2026, 3, 2, 9, 30, tzinfo=dt.UTC))
    return schedule


@contextmanager
def webhook_receiver() -> Iterator[tuple[str, list[dict]]]:
    """A loopback HTTP server that records each POST's headers and raw body; yields (url, received)."""
    received: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append({"headers": dict(self.headers), "body": body})
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    finally:
        server.shutdown()
        server.server_close()
