from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from agents_app.toolsets.contract import ToolError
from agents_app.toolsets.loki.manifest import MAX_LINE_CHARS
from agents_app.toolsets.prometheus.handlers import plan_range
from ops_app.models import DataSource
from tests.support.fake_loki_tempo import TRACE_ID, fake_loki_tempo  # noqa: F401 - fixture
from tests.support.procs import free_port
from tests.support.prometheus import prometheus_server  # noqa: F401 - fixture
from tests.support.tools import run_tool

pytestmark = pytest.mark.django_db


def configure(settings, **values):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, **values)


@pytest.fixture
def prometheus(settings, prometheus_server):  # noqa: F811
    configure(settings, prometheus_url=prometheus_server.url)
    return prometheus_server


@pytest.fixture
def loki_tempo(settings, fake_loki_tempo):  # noqa: F811
    configure(settings, loki_url=fake_loki_tempo.url, tempo_url=fake_loki_tempo.url)
    return fake_loki_tempo


# --- Prometheus (real) -------------------------------------------------------------------------


@pytest.mark.services
def test_instant_query_on_real_node_metrics(org, prometheus):
    result = run_tool("query_promql", org, query="node_load1")
    assert (result["status"], result["result_type"], result["series_total"]) == ("ok", "vector", 1)
    series = result["series"][0]
    assert series["labels"]["__name__"] == "node_load1"
    assert series["labels"]["instance"] == prometheus.node_exporter_address
    assert isinstance(series["value"], float) and series["value"] >= 0
    assert series["at"].endswith("Z")


@pytest.mark.services
def test_range_query_widens_the_step_to_the_point_budget(org, prometheus):
    result = run_tool(
        "query_promql", org, query='up{job="node"}', start="now-10m", end="now", step="1s", max_points=30
    )
    assert result["result_type"] == "matrix"
    assert result["step_seconds"] == 21 and result["step_widened"] is True  # 600 s in at most 30 points
    series = result["series"][0]
    assert 1 <= len(series["points"]) <= 30
    assert series["last"] == series["min"] == series["max"] == 1.0
    stamps = [ts for ts, _ in series["points"]]
    assert stamps == sorted(stamps) and all(b - a == 21 for a, b in zip(stamps, stamps[1:], strict=False))


@pytest.mark.services
def test_range_query_keeps_a_step_within_budget(org, prometheus):
    result = run_tool("query_promql", org, query="node_load1", start="now-1m", step="5s")
    assert (result["step_seconds"], result["step_widened"]) == (5, False)
    assert all(value is not None for _, value in result["series"][0]["points"])


@pytest.mark.services
def test_bad_promql_returns_prometheus_own_error(org, prometheus):
    with pytest.raises(ToolError) as error:
        run_tool("query_promql", org, query="sum(rate(node_cpu_seconds_total[5m]) by")
    message = str(error.value)
    assert message.startswith("Prometheus returned HTTP 400 (bad_data)")
    assert "parse error" in message


def test_prometheus_not_configured_unreachable_and_bad_times(org, settings):
    configure(settings, prometheus_url=None)
    result = run_tool("query_promql", org, query="up")
    assert result["status"] == "not_configured" and "PROMETHEUS_URL" in result["message"]
    configure(settings, prometheus_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(ToolError, match="Prometheus is unreachable"):
        run_tool("query_promql", org, query="up")
    with pytest.raises(ToolError, match="start: 'yesterday-ish' is not a time"):
        run_tool("query_promql", org, query="up", start="yesterday-ish")
    with pytest.raises(ToolError, match="end must be after start"):
        run_tool("query_promql", org, query="up", start="now", end="now-1h")


def test_step_planning_respects_the_budget():
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    assert plan_range(start, start + dt.timedelta(hours=1), "15s", 120) == 31
    assert plan_range(start, start + dt.timedelta(hours=1), "5m", 120) == 300
    assert plan_range(start, start + dt.timedelta(seconds=10), None, 120) == 1


# --- Loki (fake speaking the documented format) -------------------------------------------------


def test_logql_streams_limit_direction_and_truncation(org, loki_tempo):
    result = run_tool(
        "query_logql", org, query='{service=~"checkout|payments"}', limit=6, direction="forward"
    )
    request = loki_tempo.requests[-1]
    assert request["path"] == "/loki/api/v1/query_range"
    assert (request["params"]["limit"], request["params"]["direction"]) == ("6", "forward")
    assert int(request["params"]["end"]) - int(request["params"]["start"]) == 3600 * 10**9  # default hour, ns
    assert result["lines"] == 6 and result["limit_reached"] is True
    checkout, payments = result["streams"]
    assert checkout["labels"] == {"service": "checkout", "level": "error"}
    assert checkout["entries"][0] == ["2023-11-14T22:13:20Z", "upstream payments timed out (request 0)"]
    assert len(payments["entries"][0][1]) == MAX_LINE_CHARS
    newest_first = run_tool("query_logql", org, query='{service="checkout"}', limit=2)
    assert [e[1][-2] for e in newest_first["streams"][0]["entries"]] == ["4", "3"]


def test_logql_metric_query_and_errors(org, loki_tempo):
    metric = run_tool("query_logql", org, query='sum(rate({service="checkout"} |= "error" [1m]))')
    assert metric["result_type"] == "matrix"
    assert metric["series"][0]["max"] == 6.0 and metric["series"][0]["last"] == 6.0
    with pytest.raises(
        ToolError, match=r"Loki returned HTTP 400: parse error at line 1, col 1: syntax error"
    ):
        run_tool("query_logql", org, query='service="checkout"')
    loki_tempo.fail_with = 503
    with pytest.raises(
        ToolError, match="Loki returned HTTP 503: internal server error: ingester unavailable"
    ):
        run_tool("query_logql", org, query='{service="checkout"}')


def test_backend_timeout_is_reported(org, loki_tempo):
    # The data source's own timeout applies.
    DataSource.objects.create(organization=org, kind="loki", name="logs", url=loki_tempo.url, timeout=0.3)
    loki_tempo.stall_seconds = 1.5
    with pytest.raises(ToolError, match="Loki did not answer within 0.3 s"):
        run_tool("query_logql", org, query='{service="checkout"}')


# --- Tempo (fake speaking the documented format) ------------------------------------------------


def test_traceql_search_and_trace_by_id(org, loki_tempo):
    found = run_tool(
        "query_traceql", org, query='{resource.service.name="checkout" && status=error}', limit=5
    )
    request = loki_tempo.requests[-1]
    assert request["path"] == "/api/search" and request["params"]["limit"] == "5"
    assert request["params"]["q"] == '{resource.service.name="checkout" && status=error}'
    assert found["traces"] == [
        {
            "trace_id": TRACE_ID,
            "root_service": "checkout",
            "root_name": "POST /orders",
            "start": "2023-11-14T22:13:20Z",
            "duration_ms": 5100,
            "matched_spans": 1,
        }
    ]
    trace = run_tool("query_traceql", org, trace_id=TRACE_ID)
    assert (trace["span_total"], trace["errors"]) == (2, 1)
    root, child = trace["spans"]
    assert (root["service"], root["name"], root["duration_ms"], root["error"]) == (
        "checkout",
        "POST /orders",
        5100.0,
        True,
    )
    assert (child["service"], child["parent_span_id"]) == ("payments", root["span_id"])


def test_traceql_errors(org, loki_tempo):
    with pytest.raises(ToolError, match="Tempo returned HTTP 400: invalid TraceQL query"):
        run_tool("query_traceql", org, query="status=error")
    with pytest.raises(ToolError, match="Tempo returned HTTP 404: trace not found"):
        run_tool("query_traceql", org, trace_id="0" * 32)
    with pytest.raises(ToolError, match="exactly one of query"):
        run_tool("query_traceql", org)
    with pytest.raises(ToolError, match="hex digits"):
        run_tool("query_traceql", org, trace_id="../../etc/passwd")


def test_loki_and_tempo_not_configured(org, settings):
    configure(settings, loki_url=None, tempo_url=None)
    assert run_tool("query_logql", org, query='{a="b"}')["status"] == "not_configured"
    tempo = run_tool("query_traceql", org, query='{a="b"}')
    assert tempo["status"] == "not_configured" and "TEMPO_URL" in tempo["message"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("now", "2026-03-01T12:00:00Z"),
        ("now-90m", "2026-03-01T10:30:00Z"),
        ("-1d", "2026-02-28T12:00:00Z"),
        ("2026-02-01T08:00:00Z", "2026-02-01T08:00:00Z"),
        ("2026-02-01T09:00:00+01:00", "2026-02-01T08:00:00Z"),
        ("1772366400", "2026-03-01T12:00:00Z"),
    ],
)
def test_tool_time_arguments(text, expected):
    from ops_app.core.timeutil import iso, parse_time

    now = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
    assert iso(parse_time(text, now)) == expected
