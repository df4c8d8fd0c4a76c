"""A fake OpenAI-compatible server for tests: real HTTP on 127.0.0.1, the chat-completions wire
format (SSE streaming and plain JSON), scripted replies and a log of every request.

It runs in a thread of the test process, so anything that can reach a URL can use it: the
openai SDK in the test, a daphne subprocess, a Celery worker (pass `base_url` as
OPENAI_BASE_URL). Replies come from `route(request)` when a router is set and returns one
(use it when concurrent agents must each get their own script, e.g. by system prompt), otherwise
from the queue filled by `script(...)`. An empty queue answers HTTP 400 "script exhausted" so a
test that under-scripts fails loudly instead of hanging.

    fake.script(text("Hello"), tool_calls(call("query_promql", {"query": "up"})), error(500))

Faults: `error(429, retry_after=2)` (or `retry_after_ms=`, or a date string) answers with the
header; `held(s)` sends nothing at all for `s` seconds; `stalled("partial", s)` streams "partial"
and then goes silent. Every request records its arrival time (`RecordedRequest.at`, monotonic).
"""

from __future__ import annotations

import json
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakes import fake_embeddings


@dataclass
class Reply:
    text: str = ""
    calls: list[dict] = field(default_factory=list)  # {"id", "name", "arguments": str}
    finish_reason: str | None = None
    usage: dict = field(default_factory=lambda: {"prompt_tokens": 11, "completion_tokens": 7})
    chunk_size: int = 5  # characters per streamed text piece and per tool-argument piece
    delay: float = 0.0  # seconds before the response starts
    hold: float = 0.0  # seconds to send nothing at all, ending early if the client hangs up
    chunk_delay: float = 0.0  # seconds between streamed chunks
    status: int = 200
    error_message: str = ""
    error_type: str = "server_error"
    error_code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)  # extra response headers (Retry-After)
    stall_after: int | None = None  # streamed chunks sent before going silent for `stall` seconds
    stall: float = 0.0
    linger: float = 0.0  # seconds the stream stays open after `[DONE]` before it ends


def text(content: str, **options: Any) -> Reply:
    return Reply(text=content, **options)


def held(seconds: float = 60.0, content: str = "too late") -> Reply:
    """A model that does not answer: nothing is sent for `seconds` (unless the client hangs up,
    which is recorded in `FakeLLM.hangups`), then `content`."""
    return Reply(text=content, hold=seconds)


def stalled(before: str, seconds: float = 60.0) -> Reply:
    """A model that starts its reply and then goes silent: `before` is streamed, then nothing for
    `seconds` (a client hang-up is recorded in `FakeLLM.hangups`), then the stream ends."""
    return Reply(text=before, stall_after=1 + len(_pieces(before, 5)), stall=seconds)


def call(name: str, arguments: dict | str | None = None, id: str | None = None) -> dict:
    """One tool call; a str `arguments` is sent verbatim (use it for malformed JSON)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments or {})
    return {"id": id, "name": name, "arguments": raw}


def tool_calls(*calls: dict, text: str = "", **options: Any) -> Reply:
    return Reply(text=text, calls=list(calls), **options)


def error(
    status: int,
    message: str = "",
    *,
    code: str | None = None,
    delay: float = 0.0,
    retry_after: float | str | None = None,
    retry_after_ms: float | None = None,
) -> Reply:
    """An HTTP error; `retry_after` sends `Retry-After` (seconds, or a str as is: an HTTP date),
    `retry_after_ms` sends OpenAI's `retry-after-ms`."""
    kinds = {401: "invalid_request_error", 404: "invalid_request_error", 429: "rate_limit_error"}
    headers = {}
    if retry_after is not None:
        headers["Retry-After"] = retry_after if isinstance(retry_after, str) else f"{retry_after:g}"
    if retry_after_ms is not None:
        headers["retry-after-ms"] = f"{retry_after_ms:g}"
    return Reply(
        status=status,
        error_message=message or f"injected HTTP {status}",
        error_type=kinds.get(status, "server_error"),
        error_code=code,
        delay=delay,
        headers=headers,
    )


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict
    at: float = field(default_factory=time.monotonic)  # when it arrived (time.monotonic())

    @property
    def messages(self) -> list[dict]:
        return self.body.get("messages", [])

    @property
    def system_prompt(self) -> str:
        return next((m.get("content") or "" for m in self.messages if m.get("role") == "system"), "")

    @property
    def tool_names(self) -> list[str]:
        return [t["function"]["name"] for t in self.body.get("tools") or []]


Router = Callable[[RecordedRequest], Reply | None]


class FakeLLM:
    def __init__(self, *, api_key: str | None = None, models: tuple[str, ...] = ("fake-model",)):
        self.api_key = api_key  # when set, other keys get 401
        self.models = list(models)
        self.strict_models = False  # when True, an unknown model gets 404 model_not_found
        # /v1/embeddings: a status other than 200 fails every request; a dimension other than
        # fake_embeddings.DIMENSION answers vectors of that size (a wrong dimension).
        self.embedding_status = 200
        self.embedding_dimension: int | None = None
        self.requests: list[RecordedRequest] = []
        self.hangups: list[tuple[RecordedRequest, float]] = []  # held requests the client closed
        self.connections = 0  # TCP connections accepted: keep-alive clients reuse one
        self._queue: deque[Reply] = deque()
        self._router: Router | None = None
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------------------------

    def script(self, *replies: Reply) -> FakeLLM:
        with self._lock:
            self._queue.extend(replies)
        return self

    def route(self, router: Router | None) -> FakeLLM:
        self._router = router
        return self

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path.rstrip("/").endswith("/embeddings")]

    def _next_reply(self, request: RecordedRequest) -> Reply:
        if self._router is not None:
            routed = self._router(request)
            if routed is not None:
                return routed
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return error(400, "fake LLM: script exhausted (no reply was scripted for this request)")

    # -- lifecycle -------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self._server is not None, "start() the fake first"
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeLLM:
        fake = self

        class Handler(_Handler):
            owner = fake

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    owner: FakeLLM
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        return

    def setup(self) -> None:  # once per TCP connection, however many requests it carries
        super().setup()
        with self.owner._lock:
            self.owner.connections += 1

    def do_GET(self) -> None:
        self._record({})
        if not self._authorised():
            return
        if self.path.rstrip("/").endswith("/models"):
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "fake"} for m in self.owner.models]
            self._json(200, {"object": "list", "data": data})
        else:
            self._json(404, _error_body("no such route", "invalid_request_error", None))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._record({"_raw": raw.decode(errors="replace")})
            self._json(400, _error_body("request body is not JSON", "invalid_request_error", None))
            return
        request = self._record(body)
        if not self._authorised():
            return
        if self.path.rstrip("/").endswith("/embeddings"):
            self._embeddings(body)
            return
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._json(404, _error_body("no such route", "invalid_request_error", None))
            return
        model = body.get("model", "")
        if self.owner.strict_models and model not in self.owner.models:
            message = f"The model `{model}` does not exist or you do not have access to it."
            self._json(404, _error_body(message, "invalid_request_error", "model_not_found"))
            return
        reply = self.owner._next_reply(request)
        if reply.delay:
            time.sleep(reply.delay)
        if reply.hold and self._client_hung_up(request, reply.hold):
            return
        if reply.status != 200:
            error_body = _error_body(reply.error_message, reply.error_type, reply.error_code)
            self._json(reply.status, error_body, reply.headers)
        elif body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(reply, model, include_usage, request)
        else:
            self._json(200, _completion(reply, model))

    # -- helpers ---------------------------------------------------------------------------------

    def _embeddings(self, body: dict) -> None:
        """OpenAI's embeddings wire format, vectors from `fakes.fake_embeddings`."""
        if self.owner.embedding_status != 200:
            status = self.owner.embedding_status
            self._json(status, _error_body(f"injected HTTP {status}", "server_error", None))
            return
        inputs = body.get("input")
        inputs = [inputs] if isinstance(inputs, str) else list(inputs or [])
        if not inputs or not all(isinstance(item, str) for item in inputs):
            self._json(
                400, _error_body("input must be a string or a list of strings", "invalid_request_error", None)
            )
            return
        dimension = self.owner.embedding_dimension or fake_embeddings.DIMENSION
        data = [
            {"object": "embedding", "index": i, "embedding": fake_embeddings.vector(item, dimension)}
            for i, item in enumerate(inputs)
        ]
        tokens = sum(len(item.split()) for item in inputs)
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        self._json(200, {"object": "list", "data": data, "model": body.get("model", ""), "usage": usage})

    def _client_hung_up(self, request: RecordedRequest, seconds: float) -> bool:
        """Send nothing for `seconds`; True (and recorded) if the client closed the connection."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 0.02)
            if not readable:
                continue
            try:
                data = self.connection.recv(1, socket.MSG_PEEK)
            except OSError:
                data = b""
            if not data:
                with self.owner._lock:
                    self.owner.hangups.append((request, time.monotonic()))
                self.close_connection = True
                return True
        return False

    def _record(self, body: dict) -> RecordedRequest:
        request = RecordedRequest(
            self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
        )
        with self.owner._lock:
            self.owner.requests.append(request)
        return request

    def _authorised(self) -> bool:
        if self.owner.api_key is None:
            return True
        if self.headers.get("Authorization") == f"Bearer {self.owner.api_key}":
            return True
        self._json(
            401, _error_body("Incorrect API key provided.", "invalid_request_error", "invalid_api_key")
        )
        return False

    def _json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, reply: Reply, model: str, include_usage: bool, request: RecordedRequest) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for sent, chunk in enumerate(_chunks(reply, model, include_usage)):
                if sent == reply.stall_after and self._client_hung_up(request, reply.stall):
                    return
                self._send_chunk(f"data: {json.dumps(chunk)}\n\n".encode())
                if reply.chunk_delay:
                    time.sleep(reply.chunk_delay)
            self._send_chunk(b"data: [DONE]\n\n")
            if reply.linger:
                time.sleep(reply.linger)
            self._send_chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def _error_body(message: str, kind: str, code: str | None) -> dict:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _finish_reason(reply: Reply) -> str:
    return reply.finish_reason or ("tool_calls" if reply.calls else "stop")


def _call_id(reply: Reply, index: int) -> str:
    return reply.calls[index].get("id") or f"call_fake_{index}"


def _completion(reply: Reply, model: str) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        message["tool_calls"] = [
            {
                "id": _call_id(reply, i),
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for i, c in enumerate(reply.calls)
        ]
    usage = _with_total(reply.usage)
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": _finish_reason(reply), "logprobs": None}
        ],
        "usage": usage,
    }


def _pieces(value: str, size: int) -> list[str]:
    size = max(1, size)
    return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def _chunks(reply: Reply, model: str, include_usage: bool) -> list[dict]:
    def chunk(delta: dict, finish: str | None = None) -> dict:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    chunks = [chunk({"role": "assistant", "content": ""})]
    if reply.text:
        chunks += [chunk({"content": piece}) for piece in _pieces(reply.text, reply.chunk_size)]
    for index, spec in enumerate(reply.calls):
        head = {"index": index, "id": _call_id(reply, index), "type": "function"}
        chunks.append(chunk({"tool_calls": [dict(head, function={"name": spec["name"], "arguments": ""})]}))
        for piece in _pieces(spec["arguments"], reply.chunk_size):
            chunks.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]}))
    chunks.append(chunk({}, _finish_reason(reply)))
    if include_usage:
        usage = _with_total(reply.usage)
        chunks.append({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
                       "choices": [], "usage": usage})  # fmt: skip
    return chunks


def _with_total(usage: dict) -> dict:
    """The usage block with `total_tokens`; nested details (`prompt_tokens_details`) pass through."""
    counts = (usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))
    return dict(usage, total_tokens=sum(counts))
