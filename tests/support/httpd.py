"""Small real HTTP and HTTPS servers on loopback for the host probe tests.

The HTTPS one uses a throwaway self-signed certificate made by the openssl CLI with a known
validity, so a probe's reported expiry can be checked against it."""

from __future__ import annotations

import http.server
import ssl
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
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
