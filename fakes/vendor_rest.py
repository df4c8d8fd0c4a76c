"""The common part of the fake vendor REST APIs that alert sources write back to (PagerDuty,
Opsgenie, Grafana): a real HTTP server on 127.0.0.1 (`fakes.platform_http`'s) that records every
request as it arrived (HTTP method, path, query, headers, JSON body) and the status it answered,
checks the request's credentials (401 on a wrong one, as the vendors do), and can be told to
answer the next calls 503, to refuse connections, or to hang until released."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from fakes.platform_http import PlatformFake


@dataclass
class Request:
    method: str  # GET, POST, PUT
    path: str  # without the query
    query: dict[str, str]
    headers: dict[str, str]
    json: dict
    at: float = field(default_factory=time.monotonic)
    status: int = 0


def header(headers: dict, name: str) -> str:
    """A request header by name, whatever its case on the wire."""
    return next((value for key, value in headers.items() if key.lower() == name.lower()), "")


class VendorFake(PlatformFake):
    """Subclasses implement `authorized(headers) -> bool` and `route(method, path, query, body,
    headers) -> (status, json)`; everything else (recording, failures, hanging) is here."""

    name = "fake-vendor"

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Request] = []
        self._fail: list[int] = []
        self._hang = threading.Event()
        self._hang.set()  # set: answer at once

    # --- scripting -----------------------------------------------------------------------------

    def fail_next(self, times: int = 1, status: int = 503) -> None:
        """The next `times` requests are answered `status` (an edge's HTML page, not the API's JSON)."""
        with self.lock:
            self._fail += [status] * times

    def hang(self) -> None:
        """Hold every request unanswered until `release` (a vendor that accepts and never answers)."""
        self._hang.clear()

    def release(self) -> None:
        self._hang.set()

    # --- inspection ----------------------------------------------------------------------------

    def received(self, method: str | None = None, path_suffix: str = "") -> list[Request]:
        """The requests answered 2xx, optionally of one HTTP method and path ending."""
        with self.lock:
            return [
                r
                for r in self.requests
                if 200 <= r.status < 300
                and (method is None or r.method == method)
                and r.path.endswith(path_suffix)
            ]

    # --- serving -------------------------------------------------------------------------------

    def handle(self, verb: str, path: str, body: dict, headers: dict) -> tuple[int, dict | None, dict]:
        parts = urlsplit(path)
        query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        request = Request(method=verb, path=parts.path, query=query, headers=headers, json=body)
        with self.lock:
            self.requests.append(request)
            failing = self._fail.pop(0) if self._fail else None
        self._hang.wait(timeout=60)
        if failing is not None:
            request.status = failing
            return failing, None, {}
        if not self.authorized(headers):
            request.status = 401
            return 401, self.unauthorized(), {}
        status, payload = self.route(verb, parts.path, query, body, headers)
        request.status = status
        return status, payload, {}

    def authorized(self, headers: dict) -> bool:
        raise NotImplementedError

    def unauthorized(self) -> dict:
        return {"message": "Unauthorized"}

    def route(self, method: str, path: str, query: dict, body: dict, headers: dict) -> tuple[int, dict]:
        raise NotImplementedError
