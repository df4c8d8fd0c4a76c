"""A real Prometheus scraping a real node exporter, both on free loopback ports (1 s scrape).

Session-scoped: started once, and ready only when a node metric is actually queryable. It also
loads one alerting rule file so the live `/api/v1/rules` has something to show.
"""

from __future__ import annotations

import contextlib
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.procs import binary, free_port, start, stop, wait_until
from tests.support.required import require

PROMETHEUS = "/usr/bin/prometheus"
NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"
LIVE_RULE = "OngridNodeExporterUp"


@dataclass(frozen=True)
class PrometheusServer:
    url: str
    node_exporter_address: str


def _config(node_address: str, rules: Path) -> str:
    return textwrap.dedent(
        f"""\
        global:
          scrape_interval: 1s
          evaluation_interval: 1s
        rule_files: ["{rules}"]
        scrape_configs:
          - job_name: node
            static_configs:
              - targets: ["{node_address}"]
        """
    )


RULES = textwrap.dedent(
    f"""\
    groups:
      - name: ongrid-test
        rules:
          - alert: {LIVE_RULE}
            expr: up{{job="node"}} == 1
            labels:
              severity: info
            annotations:
              summary: The test node exporter is being scraped.
    """
)


def _node_metric_queryable(url: str) -> bool:
    body = httpx.get(f"{url}/api/v1/query", params={"query": "node_load1"}, timeout=2).json()
    return body["status"] == "success" and bool(body["data"]["result"])


@pytest.fixture(scope="session")
def prometheus_server(tmp_path_factory) -> PrometheusServer:
    prometheus, node_exporter = binary(PROMETHEUS), binary(NODE_EXPORTER)
    require(prometheus is not None, "Prometheus (Debian package prometheus)")
    require(node_exporter is not None, "node exporter (Debian package prometheus-node-exporter)")
    workdir = tmp_path_factory.mktemp("prometheus")
    node_address = f"127.0.0.1:{free_port()}"
    exporter = start(
        [
            node_exporter,
            f"--web.listen-address={node_address}",
            "--collector.disable-defaults",
            "--collector.loadavg",
            "--collector.cpu",
            "--collector.meminfo",
            "--collector.filesystem",
        ],
        workdir / "node-exporter.log",
    )
    rules = workdir / "rules.yml"
    rules.write_text(RULES)
    config = workdir / "prometheus.yml"
    config.write_text(_config(node_address, rules))
    url = f"http://127.0.0.1:{free_port()}"
    server = start(
        [
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address={url.removeprefix('http://')}",
            "--log.level=warn",
        ],
        workdir / "prometheus.log",
    )
    try:
        wait_until(lambda: _node_metric_queryable(url), 90, "Prometheus to have scraped node_load1")
        yield PrometheusServer(url=url, node_exporter_address=node_address)
    except TimeoutError:
        pytest.fail(
            "Prometheus never served node metrics:\n"
            + (workdir / "prometheus.log").read_text()[-2000:]
            + (workdir / "node-exporter.log").read_text()[-2000:]
        )
    finally:
        stop(server)
        stop(exporter)


def _job_scraped(url: str, job: str) -> bool:
    body = httpx.get(f"{url}/api/v1/query", params={"query": f'up{{job="{job}"}}'}, timeout=2).json()
    return body["status"] == "success" and bool(body["data"]["result"])


@contextlib.contextmanager
def running_self_scraping_prometheus(job: str, tenant: str, workdir: Path) -> Iterator[str]:
    """A real Prometheus that scrapes only itself under job `job`, with external label tenant=<tenant>:
    two of them stand for two organizations' instances. Yields its URL once `up{job=...}` answers."""
    executable = binary(PROMETHEUS)
    require(executable is not None, "Prometheus (Debian package prometheus)")
    url = f"http://127.0.0.1:{free_port()}"
    config = workdir / "prometheus.yml"
    config.write_text(
        textwrap.dedent(
            f"""\
            global:
              scrape_interval: 1s
              external_labels: {{tenant: "{tenant}"}}
            scrape_configs:
              - job_name: "{job}"
                static_configs:
                  - targets: ["{url.removeprefix("http://")}"]
            """
        )
    )
    process = start(
        [
            executable,
            f"--config.file={config}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address={url.removeprefix('http://')}",
            "--log.level=warn",
        ],
        workdir / "prometheus.log",
    )
    try:
        wait_until(lambda: _job_scraped(url, job), 90, f"Prometheus to have scraped job {job}")
        yield url
    finally:
        stop(process)
