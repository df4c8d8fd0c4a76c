"""Small real HTTP and HTTPS servers on loopback: for the host probe tests (GET), and a recording
receiver for outgoing webhooks (POST).

The HTTPS one uses a throwaway self-signed certificate made by the openssl CLI with a known
validity, so a probe's reported expiry can be checked against it."""

from __future__ import annotations

import http.server
import socket
import socketserver
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        status = 404 if self.path.startswith("/missing") else 200
        body = b"not here\n" if status == 404 else b"hello from the test server\n"
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args) -> None:  # keep test output quiet
        return


def make_certificate(directory: Path, days: int) -> tuple[Path, Path]:
    cert, key = directory / "server.crt", directory / "server.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            str(days),
            "-subj",
            "/CN=ongrid-test.local",
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


@contextmanager
def serve(tls_dir: Path | None = None, days: int = 30) -> Iterator[str]:
    """Yield the base URL of a server on a free loopback port (https when tls_dir is given)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    scheme = "http"
    if tls_dir is not None:
        cert, key = make_certificate(tls_dir, days)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{scheme}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextmanager
def serving(server: socketserver.BaseServer) -> Iterator[None]:
    """Serve `server` in a thread for the duration of the block, then shut it down."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@contextmanager
def recording_receiver() -> Iterator[tuple[str, list[Received]]]:
    """Yield the URL of a loopback server that answers every POST with 204 and the list it
    records them in (raw body kept, so a test can check a signature over the exact bytes)."""
    received: list[Received] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            received.append(Received(self.path, dict(self.headers.items()), body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks/ongrid", received
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def closed_port_url() -> str:
    """A loopback URL nothing listens on: a receiver that is down."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/hooks/ongrid"


@dataclass
class Site:
    """A loopback HTTP server answering each path from `routes` (404 otherwise), and what it saw."""

    port: int = 0
    routes: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)
    paths: list[str] = field(default_factory=list)
    connections: int = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def put(self, path: str, body: bytes, status: int = 200, **headers: str) -> None:
        self.routes[path] = (status, headers, body)


@contextmanager
def loopback_site() -> Iterator[Site]:
    site = Site()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            site.paths.append(self.path)
            status, headers, body = site.routes.get(self.path, (404, {}, b"not here"))
            self.send_response(status)
            for name, value in headers.items():
                if name != "no_length":
                    self.send_header(name.replace("_", "-"), value)
            if "no_length" not in headers:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args) -> None:
            return

    class Server(http.server.ThreadingHTTPServer):
        def process_request(self, request, client_address) -> None:
            site.connections += 1
            super().process_request(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    site.port = server.server_address[1]
    with serving(server):
        yield site
