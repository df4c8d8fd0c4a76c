"""A local OTLP/HTTP trace receiver, and tracing pointed at it.

The receiver speaks the wire format a collector does (POST /v1/traces, a protobuf
`ExportTraceServiceRequest`, gzip when the exporter compresses) and decodes it with
opentelemetry-proto, so the tests read what a Tempo or Jaeger would receive, not the SDK's objects.
"""

from __future__ import annotations

import dataclasses
import gzip
import http.server
import threading
from dataclasses import dataclass, field

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from ops_app.core import tracing


@dataclass
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    kind: int
    attributes: dict
    status_code: int
    resource: dict
    duration_ns: int


@dataclass
class Receiver:
    url: str = ""
    spans: list[ReceivedSpan] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    arrived: threading.Condition = field(default_factory=threading.Condition)

    def wait_for(self, name: str, within: float = 30.0) -> ReceivedSpan:
        """The span called `name`, once another process's exporter has sent it."""
        with self.arrived:
            if not self.arrived.wait_for(lambda: self.named(name), timeout=within):
                raise AssertionError(
                    f"no span {name!r} arrived within {within:g}s; got {[s.name for s in self.spans]}"
                )
        return self.one(name)

    def named(self, name: str) -> list[ReceivedSpan]:
        return [span for span in self.spans if span.name == name]

    def one(self, name: str) -> ReceivedSpan:
        [span] = self.named(name)
        return span

    def parent_of(self, span: ReceivedSpan) -> ReceivedSpan | None:
        return next((s for s in self.spans if s.span_id == span.parent_id), None)

    def children_of(self, span: ReceivedSpan) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.parent_id == span.span_id]


def _value(any_value):
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return [_value(item) for item in any_value.array_value.values]
    return getattr(any_value, kind) if kind else None


def _attributes(pairs) -> dict:
    return {pair.key: _value(pair.value) for pair in pairs}


def _decode(body: bytes, receiver: Receiver) -> None:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                receiver.spans.append(
                    ReceivedSpan(
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        kind=span.kind,
                        attributes=_attributes(span.attributes),
                        status_code=span.status.code,
                        resource=resource,
                        duration_ns=span.end_time_unix_nano - span.start_time_unix_nano,
                    )
                )


def _handler_for(receiver: Receiver):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                self.send_response(404)
                self.end_headers()
                return
            receiver.headers.append({key.lower(): value for key, value in self.headers.items()})
            with receiver.arrived:
                receiver.bodies.append(body)
                _decode(body, receiver)
                receiver.arrived.notify_all()
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args) -> None:
            return

    return Handler


@pytest.fixture
def otlp_receiver():
    """A started receiver on a free loopback port: `.url` (the base endpoint), `.spans`."""
    receiver = Receiver()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(receiver))
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        tracing.shutdown()  # flushed while the receiver still listens: no export retries at exit
        server.shutdown()
        server.server_close()


def start_tracing(settings, receiver: Receiver, **values) -> None:
    """Tracing on, exporting to `receiver`, as OTEL_EXPORTER_OTLP_ENDPOINT would configure it."""
    settings.CONFIG = dataclasses.replace(
        settings.CONFIG, otel_traces_endpoint=f"{receiver.url}/v1/traces", **values
    )
    tracing.configure(settings.CONFIG, instrument=())


@pytest.fixture
def tracing_off_after():
    """Whatever a test turned on, tracing is off again after it (the suite runs untraced)."""
    yield
    tracing.shutdown()
