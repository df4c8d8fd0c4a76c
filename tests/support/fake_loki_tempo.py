"""A local stand-in for Loki and Tempo (no Debian package exists for either).

It speaks the documented wire formats: Loki's `/loki/api/v1/query_range` (streams for log
queries, matrix for metric queries, plain-text 400 for a parse error) and Tempo's `/api/search`
and `/api/traces/<id>` (OTLP JSON `batches`). It honours `limit` and `direction`, records every
request for assertions, and can be told to fail or stall.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

BASE_NS = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20Z
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"

LOG_STREAMS = [
    {
        "stream": {"service": "checkout", "level": "error"},
        "values": [
            [str(BASE_NS + i * 1_000_000_000), f"upstream payments timed out (request {i})"] for i in range(5)
        ],
    },
    {
        "stream": {"service": "payments", "level": "warn"},
        "values": [
            [str(BASE_NS + i * 1_500_000_000), "waiting for db connection " + "x" * 600] for i in range(3)
        ],
    },
]

TRACE = {
    "batches": [
        {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "checkout"}}]},
            "scopeSpans": [
                {
                    "scope": {"name": "checkout"},
                    "spans": [
                        {
                            "traceId": TRACE_ID,
                            "spanId": "00f067aa0ba902b7",
                            "name": "POST /orders",
                            "kind": "SPAN_KIND_SERVER",
                            "startTimeUnixNano": str(BASE_NS),
                            "endTimeUnixNano": str(BASE_NS + 5_100_000_000),
                            "status": {"code": "STATUS_CODE_ERROR"},
                        }
                    ],
                }
            ],
        },
        {
            "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "payments"}}]},
            "scopeSpans": [
                {
                    "scope": {"name": "payments"},
                    "spans": [
                        {
                            "traceId": TRACE_ID,
                            "spanId": "b7ad6b7169203331",
                            "parentSpanId": "00f067aa0ba902b7",
                            "name": "Charge",
                            "kind": "SPAN_KIND_SERVER",
                            "startTimeUnixNano": str(BASE_NS + 100_000_000),
                            "endTimeUnixNano": str(BASE_NS + 5_000_000_000),
                            "status": {},
                        }
                    ],
                }
            ],
        },
    ]
}


@dataclass
class FakeLokiTempo:
    url: str = ""
    requests: list[dict] = field(default_factory=list)
    fail_with: int | None = None  # answer every request with this HTTP status
    stall_seconds: float = 0.0


def _parse_ok(query: str) -> bool:
    """Enough of LogQL / TraceQL to reject what the real servers reject first: no selector."""
    text = query.strip()
    for prefix in ("sum(", "rate(", "count_over_time(", "sum by"):
        if text.startswith(prefix):
            text = text[text.index("{") :] if "{" in text else ""
    return text.startswith("{") and text.count("{") == text.count("}")


def _handler(state: FakeLokiTempo):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # keep test output quiet
            pass

        def _send(self, status: int, body, content_type: str = "application/json") -> None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            parsed = urlparse(self.path)
            params = {k: v[0] for k, v in parse_qs(parsed.query).items()}
            headers = {k.lower(): v for k, v in self.headers.items()}
            state.requests.append({"path": parsed.path, "params": params, "headers": headers})
            if state.stall_seconds:
                time.sleep(state.stall_seconds)
            if state.fail_with:
                return self._send(
                    state.fail_with, "internal server error: ingester unavailable", "text/plain"
                )
            if parsed.path == "/loki/api/v1/query_range":
                return self._loki(params)
            if parsed.path == "/api/search":
                return self._tempo_search(params)
            if parsed.path.startswith("/api/traces/"):
                trace_id = parsed.path.rsplit("/", 1)[1]
                if trace_id.lower() == TRACE_ID:
                    return self._send(200, TRACE)
                return self._send(404, "trace not found", "text/plain")
            return self._send(404, "404 page not found", "text/plain")

        def _loki(self, params: dict) -> None:
            query = params.get("query", "")
            if not _parse_ok(query):
                return self._send(
                    400, "parse error at line 1, col 1: syntax error: unexpected IDENTIFIER", "text/plain"
                )
            if query.startswith(("sum(", "rate(", "count_over_time(", "sum by")):
                values = [[BASE_NS // 1_000_000_000 + 60 * i, str(i * 2)] for i in range(4)]
                result = {
                    "resultType": "matrix",
                    "result": [{"metric": {"service": "checkout"}, "values": values}],
                }
                return self._send(200, {"status": "success", "data": result})
            limit = int(params.get("limit", 100))
            streams = []
            for stream in LOG_STREAMS:
                values = sorted(stream["values"], reverse=params.get("direction", "backward") == "backward")
                streams.append({"stream": stream["stream"], "values": values})
            remaining, limited = limit, []
            for stream in streams:
                if remaining <= 0:
                    break
                limited.append({"stream": stream["stream"], "values": stream["values"][:remaining]})
                remaining -= len(limited[-1]["values"])
            data = {
                "resultType": "streams",
                "result": limited,
                "stats": {"summary": {"totalLinesProcessed": 8}},
            }
            return self._send(200, {"status": "success", "data": data})

        def _tempo_search(self, params: dict) -> None:
            if not _parse_ok(params.get("q", "")):
                return self._send(
                    400, "invalid TraceQL query: parse error at line 1, col 1: syntax error", "text/plain"
                )
            trace = {
                "traceID": TRACE_ID,
                "rootServiceName": "checkout",
                "rootTraceName": "POST /orders",
                "startTimeUnixNano": str(BASE_NS),
                "durationMs": 5100,
                "spanSets": [{"spans": [{"spanID": "00f067aa0ba902b7"}], "matched": 1}],
            }
            return self._send(200, {"traces": [trace], "metrics": {"inspectedTraces": 1}})

    return Handler


@pytest.fixture
def fake_loki_tempo() -> Iterator[FakeLokiTempo]:
    state = FakeLokiTempo()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
