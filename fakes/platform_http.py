"""The common part of the fake chat platforms: a real HTTP server on 127.0.0.1 in a thread that
records every call (path, method name, parsed body, headers, the monotonic time it arrived) and
can be told to answer the next call of a method with a rate-limit (429) first, to answer the next
calls of a method with a 503 (its edge up, the service behind it not), or to go away altogether
(`refuse_connections`: the listening socket is closed, connecting is refused) and come back on the
same port (`come_back`), as a platform in an outage does."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs


@dataclass
class Call:
    method: str  # the API method (sendMessage, chat.update, ...)
    body: dict
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)
    status: int = 200


class PlatformFake:
    """Subclasses implement `answer(method, body, headers, path) -> (status, json, extra headers)`."""

    name = "fake-platform"

    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.lock = threading.Lock()
        self._limits: dict[str, list[float]] = defaultdict(list)
        self._unavailable: dict[str, int] = defaultdict(int)
        self._server: ThreadingHTTPServer | None = None
        self._port = 0
        self.refused = False  # True while connections are refused
        self.all_unavailable = False  # True while every call is answered 503

    # --- scripting and inspection -------------------------------------------------------------

    def rate_limit_next(self, method: str, retry_after: float = 1) -> None:
        """The next call of `method` is answered 429 with this Retry-After (seconds)."""
        with self.lock:
            self._limits[method].append(retry_after)

    def unavailable_next(self, method: str, times: int = 1) -> None:
        """The next `times` calls of `method` are answered 503 Service Unavailable (not JSON)."""
        with self.lock:
            self._unavailable[method] += times

    def answer_unavailable(self) -> None:
        """Answer every call 503 (the edge up, the API behind it down) until `come_back`."""
        with self.lock:
            self.all_unavailable = True

    def refuse_connections(self) -> None:
        """Close the listening socket: every new connection is refused until `come_back`."""
        self.refused = True
        self._close()

    def come_back(self) -> None:
        """Answer normally again; after `refuse_connections`, listen again on the same port (the
        same base URL works again)."""
        with self.lock:
            self.all_unavailable = False
        if self.refused:
            self._listen(self._port)
            self.refused = False

    def called(self, method: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.method == method]

    def methods(self) -> list[str]:
        with self.lock:
            return [c.method for c in self.calls]

    # --- serving ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self._port, "start() the fake first"
        return f"http://127.0.0.1:{self._port}"

    def start(self):
        self._listen(0)
        return self

    def _listen(self, port: int) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def do_PATCH(self) -> None:
                self._serve()

            def do_PUT(self) -> None:
                self._serve()

            def _serve(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                body = _parse(raw, self.headers.get("Content-Type", ""))
                status, payload, extra = fake.handle(self.command, self.path, body, dict(self.headers))
                # None: an edge's own error page, not the API's JSON
                data = (
                    b"<html>503 Service Unavailable</html>"
                    if payload is None
                    else json.dumps(payload).encode()
                )
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "text/html" if payload is None else "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in extra.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a long poll cancelled on stop)

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)  # reuses a port just closed
        self._server.daemon_threads = True
        self._port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.05,), name=self.name, daemon=True).start()

    def stop(self) -> None:
        self._close()

    def _close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def handle(self, verb: str, path: str, body: dict, headers: dict) -> tuple[int, dict | None, dict]:
        method = self.method_of(verb, path)
        call = Call(method=method, body=body, headers=headers)
        with self.lock:
            self.calls.append(call)
            limited = self._limits[method].pop(0) if self._limits[method] else None
            down = self.all_unavailable or self._unavailable[method] > 0
            if down and not self.all_unavailable:
                self._unavailable[method] -= 1
        if down:
            call.status = 503
            return 503, None, {}
        if limited is not None:
            call.status = 429
            return self.rate_limited(limited)
        status, payload, extra = self.answer(method, body, headers, path)
        call.status = status
        return status, payload, extra

    def method_of(self, verb: str, path: str) -> str:
        return path.rstrip("/").rsplit("/", 1)[-1]

    def rate_limited(self, retry_after: float) -> tuple[int, dict, dict]:
        return 429, {"ok": False, "error": "ratelimited"}, {"Retry-After": f"{retry_after:g}"}

    def answer(self, method: str, body: dict, headers: dict, path: str) -> tuple[int, dict, dict]:
        raise NotImplementedError


def _parse(raw: bytes, content_type: str) -> dict:
    if not raw:
        return {}
    if "json" in content_type:
        return json.loads(raw)
    return {key: values[-1] for key, values in parse_qs(raw.decode()).items()}
