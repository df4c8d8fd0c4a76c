"""Ongrid's own Prometheus metrics, served at `/metrics`.

Counters and histograms live in the process that does the work. With several processes (daphne
and Celery workers) set `PROMETHEUS_MULTIPROC_DIR` to a shared empty directory: prometheus-client
then writes per-process files and `/metrics` aggregates them. The worker-session gauge is read
from the database at scrape time, so it is right whichever process runs the workers.
"""

from __future__ import annotations

import hmac
import os

from django.conf import settings
from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily

from chat_app.models import ChatSession, SessionStatus

TOOL_INVOCATIONS = Counter(
    "ongrid_tool_invocations", "Tool calls by tool name and result status.", ["tool", "status"]
)
TOOL_DURATION = Histogram(
    "ongrid_tool_duration_seconds",
    "Wall time of tool calls.",
    ["tool"],
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30, 60),
)
LLM_CALLS = Counter("ongrid_llm_calls", "LLM calls by model and result.", ["model", "status"])
LLM_LATENCY = Histogram(
    "ongrid_llm_latency_seconds",
    "Wall time of LLM calls, streaming included.",
    ["model"],
    buckets=(0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120),
)
LLM_TOKENS = Counter("ongrid_llm_tokens", "Tokens used by model and kind.", ["model", "kind"])


class WorkerSessionCollector:
    """Active worker sessions (pending / running) by status, counted in the database."""

    def describe(self):
        # Lets the registry learn the metric's name without touching the database at import time.
        yield self._family()

    @staticmethod
    def _family() -> GaugeMetricFamily:
        return GaugeMetricFamily(
            "ongrid_worker_sessions", "Worker sessions that have not finished, by status.", labels=["status"]
        )

    def collect(self):
        gauge = self._family()
        counts = dict.fromkeys((SessionStatus.PENDING.value, SessionStatus.RUNNING.value), 0)
        rows = (
            ChatSession.objects.filter(parent_session__isnull=False, status__in=list(counts))
            .values("status")
            .annotate(n=Count("id"))
        )
        for row in rows:
            counts[row["status"]] = row["n"]
        for status, count in counts.items():
            gauge.add_metric([status], count)
        yield gauge


_WORKER_COLLECTOR = WorkerSessionCollector()
REGISTRY.register(_WORKER_COLLECTOR)


def record_tool(tool: str, status: str, seconds: float) -> None:
    TOOL_INVOCATIONS.labels(tool=tool, status=status).inc()
    TOOL_DURATION.labels(tool=tool).observe(seconds)


def record_llm(model: str, status: str, seconds: float, usage: dict | None = None) -> None:
    LLM_CALLS.labels(model=model, status=status).inc()
    LLM_LATENCY.labels(model=model).observe(seconds)
    for kind in ("prompt_tokens", "completion_tokens"):
        if usage and usage.get(kind):
            LLM_TOKENS.labels(model=model, kind=kind.removesuffix("_tokens")).inc(usage[kind])


def exposition() -> bytes:
    """The text exposition of every metric, aggregated across processes when configured so."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return generate_latest(REGISTRY)
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    registry.register(_WORKER_COLLECTOR)
    return generate_latest(registry)


def metrics_view(request: HttpRequest) -> HttpResponse:
    """Prometheus scrape endpoint. Open to a scraper bringing `Bearer <ONGRID_METRICS_TOKEN>`, to
    signed-in staff, and to everyone only when ONGRID_METRICS_PUBLIC=1 says so."""
    config = settings.CONFIG
    if config.metrics_public or request.user.is_staff:
        return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
    if not config.metrics_token:
        return HttpResponse(
            "metrics are not public: set ONGRID_METRICS_TOKEN and scrape with a bearer token, "
            "or set ONGRID_METRICS_PUBLIC=1\n",
            status=403,
            content_type="text/plain",
        )
    supplied = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
    if not hmac.compare_digest(supplied.encode(), config.metrics_token.encode()):
        refused = HttpResponse("metrics require a bearer token\n", status=401, content_type="text/plain")
        refused["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return refused
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
