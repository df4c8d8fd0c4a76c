"""OpenTelemetry traces, off unless an OTLP/HTTP endpoint is configured (docs/observability.md).

Off is the default and costs nothing: the SDK is imported only by `configure` when
`OTEL_EXPORTER_OTLP_ENDPOINT` (or the traces-specific variable) is set, and every helper here
answers from one module global otherwise (`span` hands back a shared do-nothing span).

The tracer provider is this module's own rather than only the process-global one, because the
global can be set once per process and the tests point spans at a receiver of their own; the
global is set too (the first time), so instrumentation libraries share the same pipeline.

What goes on a span is decided by the callers (`agents_app/toolsets/tracing.py` for the agents);
`capture_content()` says whether message bodies and tool payloads may be attached.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Coroutine, Iterator, Mapping
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

AttributeValue = str | bool | int | float | list[str] | list[int] | list[float] | list[bool]


class _Tracing:
    def __init__(self, provider: Any, capture: bool) -> None:
        from opentelemetry import trace

        self.provider = provider
        self.tracer = provider.get_tracer("ongrid")
        self.capture = capture
        self.trace = trace


_state: _Tracing | None = None
_instrumented: list[Any] = []  # the instrumentors attached to the current pipeline
FRAMEWORKS = ("django", "celery")
# Probes, scrapes and static files (regular expressions searched in the full URL).
EXCLUDED_URLS = r"/healthz/?(\?|$),/metrics/?(\?|$),/static/"


class _NoSpan:
    """Stands in for a span while tracing is off: every call is accepted and does nothing."""

    def set_attribute(self, key: str, value: Any) -> None:
        return None

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        return None

    def set_error(self, error_type: str) -> None:
        return None

    def end(self) -> None:
        return None

    def is_recording(self) -> bool:
        return False


NO_SPAN = _NoSpan()


class _Span:
    """A thin face on an SDK span: attribute values that OTel refuses (None, dicts) are dropped
    instead of warned about, and an error is marked by its type only (never a message a remote
    server wrote)."""

    def __init__(self, span: Any) -> None:
        self._span = span

    def set_attribute(self, key: str, value: Any) -> None:
        if value is None or value == "" or isinstance(value, dict):
            return
        if isinstance(value, tuple):
            value = list(value)
        self._span.set_attribute(key, value)

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        for key, value in attributes.items():
            self.set_attribute(key, value)

    def set_error(self, error_type: str) -> None:
        from opentelemetry.trace import Status, StatusCode

        self._span.set_attribute("error.type", error_type)
        self._span.set_status(Status(StatusCode.ERROR))

    def end(self) -> None:
        self._span.end()

    def is_recording(self) -> bool:
        return self._span.is_recording()


def enabled() -> bool:
    return _state is not None


def capture_content() -> bool:
    """True only when ONGRID_OTEL_CAPTURE_CONTENT is on: bodies, arguments and results may go on spans."""
    return _state is not None and _state.capture


def configure(config: Any, *, instrument: tuple[str, ...] = FRAMEWORKS) -> bool:
    """Start exporting spans if `config` names an OTLP endpoint; True when tracing is on.

    Called once per process at start (ops_app's `ready`); calling it again replaces the pipeline
    (the previous one is flushed and shut down). `instrument`: which of Django's requests and
    Celery's tasks to trace too, with the official instrumentations."""
    global _state
    shutdown()
    if not config.otel_traces_endpoint:
        return False
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({**config.otel_resource_attributes, "service.name": config.otel_service_name})
    provider = TracerProvider(resource=resource)
    exporter = OTLPSpanExporter(endpoint=config.otel_traces_endpoint, headers=dict(config.otel_headers))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    with contextlib.suppress(Exception):  # already set in this process: ours stays private
        if not isinstance(trace.get_tracer_provider(), TracerProvider):
            trace.set_tracer_provider(provider)
    _state = _Tracing(provider, config.otel_capture_content)
    _instrument_frameworks(provider, instrument)
    _correlate_log_lines()
    log.info("OpenTelemetry traces go to %s", _without_credentials(config.otel_traces_endpoint))
    return True


def _instrument_frameworks(provider: Any, frameworks: tuple[str, ...]) -> None:
    """HTTP requests (Django, also under ASGI) and Celery tasks as spans, with W3C trace context
    carried in Celery's message headers so a turn queued by a request continues its trace."""
    if "django" in frameworks:
        from opentelemetry.instrumentation.django import DjangoInstrumentor

        # Probes and scrapes would drown the traces that matter.
        DjangoInstrumentor().instrument(tracer_provider=provider, excluded_urls=EXCLUDED_URLS)
        _instrumented.append(DjangoInstrumentor())
    if "celery" in frameworks:
        from opentelemetry.instrumentation.celery import CeleryInstrumentor

        CeleryInstrumentor().instrument(tracer_provider=provider)
        _instrumented.append(CeleryInstrumentor())


class _Correlated:
    """A log formatter that ends a line written inside a span with its trace and span ids, so a
    log line leads to its trace and back (the formatter it wraps does the rest)."""

    def __init__(self, inner: logging.Formatter | None) -> None:
        self.inner = inner or logging.Formatter()

    def format(self, record: logging.LogRecord) -> str:
        line = self.inner.format(record)
        if _state is None:
            return line
        context = _state.trace.get_current_span().get_span_context()
        if not context.is_valid:
            return line
        trace_id = _state.trace.format_trace_id(context.trace_id)
        return f"{line} trace_id={trace_id} span_id={_state.trace.format_span_id(context.span_id)}"

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _correlate_log_lines() -> None:
    """Every handler of the root logger and of Ongrid's own loggers (ongrid_site/settings.py)."""
    loggers = [logging.getLogger(), *(logging.getLogger(name) for name in logging.root.manager.loggerDict)]
    for logger in loggers:
        for handler in getattr(logger, "handlers", []):
            if not isinstance(handler.formatter, _Correlated):
                handler.setFormatter(_Correlated(handler.formatter))  # type: ignore[arg-type]


def _without_credentials(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}{f':{parts.port}' if parts.port else ''}{parts.path}"


def shutdown() -> None:
    """Flush what is queued and stop exporting (process exit, a test's teardown)."""
    global _state
    state, _state = _state, None
    while _instrumented:
        _instrumented.pop().uninstrument()
    if state is not None:
        state.provider.shutdown()


def force_flush(timeout_millis: int = 10000) -> bool:
    """Send every finished span now; the tests call it before reading the receiver."""
    return _state is None or _state.provider.force_flush(timeout_millis)


@contextlib.contextmanager
def span(name: str, attributes: Mapping[str, Any] | None = None, *, kind: str = "internal") -> Iterator[Any]:
    """A span that is the current one inside the block (children nest under it, across the
    asyncio tasks started inside, which copy the context). An exception marks it failed by type."""
    if _state is None:
        yield NO_SPAN
        return
    sdk_kind = getattr(_state.trace.SpanKind, kind.upper())
    with _state.tracer.start_as_current_span(
        name, kind=sdk_kind, record_exception=False, set_status_on_exception=False
    ) as raw:
        traced = _Span(raw)
        traced.set_attributes(attributes or {})
        try:
            yield traced
        except BaseException as error:
            traced.set_error(type(error).__name__)
            raise


def start_span(name: str, attributes: Mapping[str, Any] | None = None, *, kind: str = "internal") -> Any:
    """A span under the current one that is not made current: for work that runs across yields
    of an async generator (a model's stream), where attaching a context cannot be undone safely.
    The caller ends it."""
    if _state is None:
        return NO_SPAN
    sdk_kind = getattr(_state.trace.SpanKind, kind.upper())
    traced = _Span(_state.tracer.start_span(name, kind=sdk_kind))
    traced.set_attributes(attributes or {})
    return traced


def current_trace_id() -> str:
    """The hex trace id of the current span, or "" (tracing off, or no span): audit rows keep it."""
    if _state is None:
        return ""
    context = _state.trace.get_current_span().get_span_context()
    return _state.trace.format_trace_id(context.trace_id) if context.is_valid else ""


def carry_context(coro: Coroutine[Any, Any, T]) -> Coroutine[Any, Any, T]:
    """`coro`, run later in a fresh context (a turn started in the background), continuing the
    trace current now. Unchanged while tracing is off."""
    if _state is None:
        return coro
    from opentelemetry import context

    captured = context.get_current()

    async def continued() -> T:
        token = context.attach(captured)
        try:
            return await coro
        finally:
            context.detach(token)

    return continued()


def trace_url(trace_id: str, template: str) -> str:
    """The trace UI's page of `trace_id` from ONGRID_TRACE_URL_TEMPLATE; "" without a template."""
    if not trace_id or not template:
        return ""
    return template.replace("{trace_id}", trace_id)
