"""A real Alertmanager whose only receiver is a webhook (e.g. Ongrid's live test server).

Its own temp storage, clustering off, grouping by alertname with 1 s group wait / interval so a
posted alert reaches the webhook within seconds.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.procs import binary, free_port, start, stop, wait_until
from tests.support.required import require

ALERTMANAGER = "/usr/bin/prometheus-alertmanager"


@dataclass(frozen=True)
class AlertmanagerServer:
    url: str

    def post_alert(self, labels: dict, annotations: dict, starts_at: dt.datetime, ends_at=None) -> None:
        alert = {"labels": labels, "annotations": annotations, "startsAt": starts_at.isoformat()}
        if ends_at is not None:
            alert["endsAt"] = ends_at.isoformat()
        response = httpx.post(f"{self.url}/api/v2/alerts", json=[alert], timeout=5)
        response.raise_for_status()


def _config(webhook_url: str) -> str:
    return textwrap.dedent(
        f"""\
        route:
          receiver: ongrid
          group_by: [alertname]
          group_wait: 1s
          group_interval: 1s
          repeat_interval: 1h
        receivers:
          - name: ongrid
            webhook_configs:
              - url: "{webhook_url}"
                send_resolved: true
        """
    )


@contextlib.contextmanager
def running_alertmanager(webhook_url: str, workdir: Path) -> Iterator[AlertmanagerServer]:
    executable = binary(ALERTMANAGER)
    require(executable is not None, "Alertmanager (Debian package prometheus-alertmanager)")
    config = workdir / "alertmanager.yml"
    config.write_text(_config(webhook_url))
    url = f"http://127.0.0.1:{free_port()}"
    process = start(
        [
            executable,
            f"--config.file={config}",
            f"--storage.path={workdir / 'data'}",
            f"--web.listen-address={url.removeprefix('http://')}",
            "--cluster.listen-address=",
            "--log.level=warn",
        ],
        workdir / "alertmanager.log",
    )
    try:
        wait_until(
            lambda: httpx.get(f"{url}/-/ready", timeout=2).status_code == 200, 60, "Alertmanager ready"
        )
        yield AlertmanagerServer(url)
    finally:
        stop(process)
