"""A live Django test server for many simultaneous clients (e.g. 50 Alertmanager deliveries at
once): Django's threaded WSGI server with a deeper listen backlog, in a thread of this process,
so it shares the test database and the test's settings."""

from __future__ import annotations

import threading

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, *args) -> None:
        pass


class _WideServer(ThreadedWSGIServer):
    """socketserver's default backlog of 5 resets the rest of a burst before Django sees it."""

    request_queue_size = 128


@pytest.fixture
def wide_live_server():
    """Base URL of the server; shut down after the test."""
    server = _WideServer(("127.0.0.1", 0), _QuietHandler, allow_reuse_address=False)
    server.set_app(WSGIHandler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
