"""The egress policy in tests: the loopback allowance every other test runs with, a loopback
listener that counts the connections it accepts (a refused request must leave it untouched), and
a resolver whose answers a test writes (names that resolve to loopback, an answer that changes
between saving a URL and connecting to it)."""

from __future__ import annotations

import dataclasses
import http.server
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ops_app.core import egress
from tests.support.httpd import make_certificate, serving

# What tests/conftest.py allows for the whole suite (and child processes get in their environment).
LOOPBACK_ALLOWED = ("127.0.0.0/8", "::1", "localhost")
# What an internal service answers: no Test, tool error or delivery outcome may show it.
INTERNAL_ANSWER = "internal-answer-5e1f: root:x:0:0 <html>admin login</html>"


@dataclass
class Listener:
    """A loopback HTTP server: every accepted connection and each request's Host header."""

    port: int
    scheme: str = "http"
    certificate: str = ""  # PEM, for https
    connections: int = 0
    hosts: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"


@contextmanager
def loopback_listener(
    status: int = 200, body: str = INTERNAL_ANSWER, location: str = "", tls_dir: Path | None = None
) -> Iterator[Listener]:
    """A server on 127.0.0.1 answering every GET or POST with `status` and `body` (and a Location
    header when `location` is given: a redirect); https with a certificate for ongrid-test.local
    when `tls_dir` is given."""
    listener = Listener(port=0)

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            listener.hosts.append(self.headers.get("Host", ""))
            listener.paths.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            payload = body.encode()
            self.send_response(status)
            if location:
                self.send_header("Location", location)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _answer  # noqa: N815 - http.server's naming

        def log_message(self, format: str, *args) -> None:
            return

    class Server(http.server.ThreadingHTTPServer):
        def process_request(self, request, client_address) -> None:
            listener.connections += 1
            super().process_request(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    listener.port = server.server_address[1]
    if tls_dir is not None:
        cert, key = make_certificate(tls_dir, days=2)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        listener.scheme, listener.certificate = "https", cert.read_text()
    with serving(server):
        yield listener


@pytest.fixture
def listener() -> Iterator[Listener]:
    with loopback_listener() as running:
        yield running


@pytest.fixture
def egress_enforced(settings) -> None:
    """The policy as a deployment without ONGRID_EGRESS_ALLOW has it: loopback refused too."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, egress_allow=egress.AllowList())


def allow(settings, *entries: str) -> None:
    """What platform staff would put in ONGRID_EGRESS_ALLOW."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, egress_allow=egress.AllowList.parse(entries))


@pytest.fixture
def fake_dns(monkeypatch) -> dict[str, list[str]]:
    """{name: [addresses]} the resolver answers (edit it to change an answer); other names go to
    the system resolver."""
    answers: dict[str, list[str]] = {}
    system = egress.resolve

    def resolve(host: str, port: int) -> list:
        if host in answers:
            return [egress.ipaddress.ip_address(address) for address in answers[host]]
        return system(host, port)

    monkeypatch.setattr(egress, "resolve", resolve)
    return answers
