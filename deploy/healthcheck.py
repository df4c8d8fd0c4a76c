"""The image's HEALTHCHECK: GET /healthz of the daphne in this container, standard library only.

It names a host from ALLOWED_HOSTS, since Django refuses any other Host header with a 400 and a
probe of 127.0.0.1 would fail once ALLOWED_HOSTS is the public name only. Containers that run
something other than daphne (worker, beat, im) have no HTTP port, so there is nothing to probe.
"""

from __future__ import annotations

import http.client
import json
import os
import sys
from pathlib import Path


def serves_http() -> bool:
    try:
        return b"daphne" in Path("/proc/1/cmdline").read_bytes()
    except OSError:
        return True  # not in a container: assume the caller means the web server


def probe_host() -> str:
    for entry in os.environ.get("ALLOWED_HOSTS", "").split(","):
        entry = entry.strip().lstrip(".")
        if entry and entry != "*":
            return entry
    return "localhost"


def main() -> int:
    if not serves_http():
        print("healthcheck: this container runs no web server; nothing to probe")
        return 0
    port = int(os.environ.get("ONGRID_PORT") or 8000)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", "/healthz", headers={"Host": probe_host()})
        response = connection.getresponse()
        body = response.read()
    except OSError as exc:
        print(f"healthcheck: no answer on port {port}: {exc}")
        return 1
    if response.status == 200:
        return 0
    try:
        failed = json.loads(body).get("failed")
    except ValueError:
        failed = body[:200]
    print(f"healthcheck: /healthz answered {response.status}; failed: {failed}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
