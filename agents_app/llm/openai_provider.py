"""Any OpenAI-compatible chat-completions endpoint, through the official SDK.

The SDK's own retries are switched off: this module retries 429 / 5xx / connection failures itself,
but only while nothing has been streamed yet, so a user never sees a sentence twice. A 429 or 503
that says how long to wait (`Retry-After` in seconds or as an HTTP date, `retry-after-ms`) is
waited out, up to ONGRID_LLM_RETRY_AFTER_MAX; a longer wait fails the call at once rather than
holding the turn. Other retries back off exponentially with jitter. Before each wait the stream
yields an `LLMRetrying`, which the chat shows as "Retrying…".

A timeout is not retried: ONGRID_LLM_TIMEOUT is how long the person waits for an endpoint that
accepted the request and then went silent, not how long each of several attempts may hang.
Authentication and unknown-model failures are not retried either and carry a message naming the
setting to fix.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import time
import weakref
from collections.abc import AsyncIterator, Mapping
from email.utils import parsedate_to_datetime
from typing import Any

import openai

from agents_app.llm.base import LLMCompletion, LLMDelta, LLMError, LLMEvent, LLMRetrying, ToolCall
from audit_app.redaction import redact_text
from ops_app.core import outbound
from ops_app.core.egress import EgressRefused

logger = logging.getLogger(__name__)

_CLIENTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _client_for_loop(api_key: str, base_url: str | None, timeout: float) -> openai.AsyncOpenAI:
    """One SDK client per event loop and endpoint: connections are reused, never shared across loops."""
    loop = asyncio.get_running_loop()
    per_loop = _CLIENTS.setdefault(loop, {})
    key = (api_key, base_url, timeout)
    if key not in per_loop:
        per_loop[key] = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout,
            max_retries=0,
            http_client=outbound.async_llm_client(),  # under the egress policy (docs/security.md)
        )
    return per_loop[key]


class OpenAIProvider:
    name = "openai"
    # The setting a timeout message names; an organization's endpoint names its own field instead.
    timeout_setting = "ONGRID_LLM_TIMEOUT"

    def __init__(
        self,
        *,
        api_key: str | None,
        base_url: str | None = None,
        model: str = "gpt-4o-mini",
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff_base: float = 0.5,
        backoff_cap: float = 8.0,
        retry_after_max: float = 60.0,
    ):
        self.api_key = api_key or "not-set"
        self.base_url = base_url
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        self.retry_after_max = retry_after_max

    @classmethod
    def from_config(cls, config: Any) -> OpenAIProvider:
        return cls(
            api_key=config.openai_api_key,
            base_url=config.openai_base_url,
            model=config.model,
            timeout=config.llm_timeout,
            max_retries=config.llm_max_retries,
            retry_after_max=config.llm_retry_after_max,
        )

    def default_model(self) -> str:
        return self.model

    def backoff(self, attempt: int) -> float:
        """Exponential backoff with jitter, so parallel workers do not retry in lockstep."""
        delay = min(self.backoff_cap, self.backoff_base * (2 ** (attempt - 1)))
        return delay * (0.5 + random.random() / 2)

    async def stream_chat(
        self, messages: list[dict], tools: list[dict], model: str | None = None, **options: Any
    ) -> AsyncIterator[LLMEvent]:
        model = model or self.model
        attempt = 0
        while True:
            streamed = False
            try:
                async for event in self._stream_once(messages, tools, model, options):
                    streamed = streamed or isinstance(event, LLMDelta)
                    yield event
                return
            except LLMError as error:
                if not error.retryable or streamed or attempt >= self.max_retries:
                    _after(error, attempt + 1)
                    logger.warning("LLM call failed for good: %s", error.message)
                    raise
                delay = self._wait_before_retry(error, attempt + 1)
                attempt += 1
                logger.warning(
                    "LLM call failed (%s); retry %d of %d in %.2fs",
                    error.message, attempt, self.max_retries, delay,
                )  # fmt: skip
                reason = _short_reason(error)
                yield LLMRetrying(reason, attempt + 1, self.max_retries + 1, delay, error.status)
                await asyncio.sleep(delay)

    def _wait_before_retry(self, error: LLMError, attempt: int) -> float:
        """Seconds to wait before the next attempt: what the endpoint asked for, at least; our own
        backoff when it did not say. Raises when it asks for longer than we are willing to hold."""
        if error.retry_after is None:
            return self.backoff(attempt)
        if error.retry_after > self.retry_after_max:
            refused = LLMError(
                f"{error.message}; the model asked to wait {math.ceil(error.retry_after)} s, longer than "
                f"ONGRID_LLM_RETRY_AFTER_MAX ({self.retry_after_max:g} s), so it was not retried",
                status=error.status,
            )
            _after(refused, attempt)
            logger.warning("LLM call failed for good: %s", refused.message)
            raise refused from error
        return error.retry_after

    def _silence(self, mid_reply: bool) -> LLMError:
        """The endpoint went quiet for the whole timeout (docs/kernel.md: a timeout is not retried)."""
        endpoint = self.base_url or "the OpenAI API"
        if mid_reply:
            return LLMError(
                f"the LLM endpoint {endpoint} stopped answering mid-reply: nothing for {self.timeout:g} s "
                f"({self.timeout_setting})"
            )
        return LLMError(
            f"the LLM endpoint {endpoint} did not answer within {self.timeout:g} s ({self.timeout_setting})"
        )

    async def _stream_once(
        self, messages: list[dict], tools: list[dict], model: str, options: dict
    ) -> AsyncIterator[LLMEvent]:
        client = _client_for_loop(self.api_key, self.base_url, self.timeout)
        request: dict[str, Any] = {
            "model": model,
            "messages": messages,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            request["tools"] = tools
        request.update(options)
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        finish_reason = "stop"
        try:
            # The body goes in `extra_body`, which the SDK merges over its typed fields as is: its
            # type-driven walk of `messages` and `tools` costs ~20 ms of CPU on a coordinator's
            # request and would change nothing here (plain JSON, no aliased keys). bench/README.md.
            # The raw response, not the SDK's stream: it builds a typed chunk model per event, ~45 % of
            # a worker's CPU on a fast model; each event here is one json.loads (bench/README.md).
            raw = client.chat.completions.with_streaming_response.create(
                model=model, messages=[], stream=True, extra_body=_body_of(request)
            )
            async with raw as response:  # closes the HTTP response even when the consumer stops early
                async for chunk in _events(response):
                    if chunk.get("usage"):
                        usage = _usage(chunk["usage"])
                    for choice in chunk.get("choices") or ():
                        delta = choice.get("delta") or {}
                        content = delta.get("content")
                        if content:
                            text.append(content)
                            yield LLMDelta(content)
                        for piece in delta.get("tool_calls") or ():
                            _accumulate(calls, piece)
                        if choice.get("finish_reason"):
                            finish_reason = choice["finish_reason"]
        except openai.APITimeoutError as error:  # silence, before or during the reply: not retried
            raise _with_partial(self._silence(bool(text)), text) from error
        except openai.APIError as error:
            raise _with_partial(_translate(error, model, self.base_url), text) from error
        except EgressRefused as refused:  # not retried: it would be refused again
            endpoint = self.base_url or "the OpenAI API"
            raise LLMError(
                f"the LLM endpoint {endpoint} is refused by the egress policy: {refused.reason}"
            ) from None
        except Exception as error:  # transport failures the SDK does not wrap mid-stream
            if type(error).__module__.split(".")[0] not in {"httpx", "httpx2", "httpcore"}:
                raise
            if "Timeout" in type(error).__name__:
                broke = self._silence(bool(text))
            else:
                broke = LLMError(
                    f"the connection to the LLM endpoint broke: {type(error).__name__}", retryable=True
                )
            raise _with_partial(broke, text) from error
        yield LLMCompletion(
            text="".join(text),
            tool_calls=[_finish_call(index, calls[index]) for index in sorted(calls)],
            usage=usage,
            finish_reason=finish_reason,
            model=model,
        )


def _body_of(request: dict[str, Any]) -> dict[str, Any]:
    """Everything but the SDK's typed arguments; merged over them, so `messages` is ours."""
    return {key: value for key, value in request.items() if key not in {"model", "stream"}}


# A data field split over more lines than this is not JSON that will ever parse: dropped.
MAX_DATA_LINES = 64
# After `[DONE]`, how long and how many lines the rest of the stream is read for: read to its end,
# the keep-alive connection goes back to the pool (left unread, it is closed, and the next call
# dials again: a TLS handshake per model call on a real endpoint). A server that keeps streaming
# or holds the stream open past this loses its connection instead.
DRAIN_SECONDS = 1.0
DRAIN_LINES = 16


async def _events(response: Any) -> AsyncIterator[dict]:
    """The JSON objects of a chat-completions event stream (server-sent events), until `[DONE]`.
    An event carrying `error` raises the SDK's APIError, as its own stream does."""
    pending: list[str] = []
    lines = response.iter_lines()
    async for line in lines:
        if not line.startswith("data:"):
            continue  # blank separators, comments, event names
        data = line[5:].strip()
        if data == "[DONE]":
            await _drain(lines)
            return
        pending.append(data)
        try:
            event = json.loads("\n".join(pending))
        except ValueError:
            if len(pending) >= MAX_DATA_LINES:
                pending = []
            continue
        pending = []
        if not isinstance(event, dict):
            continue
        if event.get("error"):
            failure = event["error"]
            message = failure.get("message") if isinstance(failure, dict) else None
            raise openai.APIError(
                message or "An error occurred during streaming", response.http_request, body=failure
            )
        yield event


async def _drain(lines: AsyncIterator[str]) -> None:
    """Read the stream past `[DONE]` to its end (see DRAIN_SECONDS), never failing the call."""
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            count = 0
            async for _line in lines:
                count += 1
                if count > DRAIN_LINES:
                    return
    except Exception:  # noqa: BLE001 - the reply is complete; only the connection's reuse is at stake
        return


def _accumulate(calls: dict[int, dict[str, Any]], piece: dict) -> None:
    """Tool calls arrive in fragments keyed by index: the id and name once, arguments in pieces."""
    index = piece.get("index")
    slot = calls.setdefault(index if index is not None else len(calls), {"id": "", "name": "", "args": []})
    if piece.get("id"):
        slot["id"] = piece["id"]
    function = piece.get("function") or {}
    name, arguments = function.get("name"), function.get("arguments")
    if name:
        slot["name"] = name if not slot["name"] else slot["name"] + name
    if arguments:
        slot["args"].append(arguments)


def _finish_call(index: int, slot: dict[str, Any]) -> ToolCall:
    return ToolCall(id=slot["id"] or f"call_{index}", name=slot["name"], arguments_raw="".join(slot["args"]))


def _after(error: LLMError, attempts: int) -> LLMError:
    """The final error of a call that was tried `attempts` times says so."""
    if attempts > 1:
        error.message = f"{error.message} (after {attempts} attempts)"
        error.args = (error.message,)
    return error


def _with_partial(error: LLMError, streamed: list[str]) -> LLMError:
    error.partial = "".join(streamed)
    return error


def _short_reason(error: LLMError) -> str:
    """What the retry line says happened, without the server's own words."""
    if error.status is not None:
        return f"the model answered HTTP {error.status}"
    return "the connection to the model failed"


def retry_after_seconds(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """How long a response asks the client to wait: `retry-after-ms` (OpenAI's, more precise) or
    `Retry-After` as seconds or an HTTP date; None when it says nothing usable."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = (headers.get("retry-after") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _translate(error: openai.APIError, model: str, base_url: str | None) -> LLMError:
    endpoint = base_url or "the OpenAI API"
    if isinstance(error, openai.APIConnectionError):
        return LLMError(f"cannot reach the LLM endpoint {endpoint}: {error}", retryable=True)
    status = getattr(error, "status_code", None)
    detail = _detail(error)
    if isinstance(error, openai.AuthenticationError):
        return LLMError(
            f"the LLM endpoint {endpoint} refused the API key (check OPENAI_API_KEY): {detail}", status=status
        )
    if isinstance(error, openai.PermissionDeniedError):
        return LLMError(f"the API key may not use model {model!r} at {endpoint}: {detail}", status=status)
    if isinstance(error, openai.NotFoundError):
        return LLMError(
            f"model {model!r} was not found at {endpoint} "
            f"(check ONGRID_MODEL or the persona's model): {detail}",
            status=status,
        )
    wait = retry_after_seconds(_headers(error)) if status in (429, 503) else None
    if isinstance(error, openai.RateLimitError):
        return LLMError(
            f"the LLM endpoint is rate limiting (HTTP 429): {detail}",
            retryable=True,
            status=status,
            retry_after=wait,
        )
    if status is not None and status >= 500:
        return LLMError(
            f"the LLM endpoint failed with HTTP {status}: {detail}",
            retryable=True,
            status=status,
            retry_after=wait,
        )
    if status == 408 or status == 409:
        return LLMError(f"the LLM endpoint answered HTTP {status}: {detail}", retryable=True, status=status)
    return LLMError(f"the LLM endpoint rejected the request (HTTP {status}): {detail}", status=status)


def _headers(error: openai.APIError) -> Mapping[str, str] | None:
    response = getattr(error, "response", None)
    return getattr(response, "headers", None)


def _detail(error: openai.APIError) -> str:
    """The server's own words, minus any echo of the key (OpenAI quotes part of a rejected key)."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return redact_text(str(inner["message"]))
    return redact_text(getattr(error, "message", None) or str(error))


def _usage(reported: dict) -> dict:
    """Tokens of one call, with `cached_tokens` (the part of the prompt the provider's cache served)
    when the provider reports it."""
    usage = {
        "prompt_tokens": reported.get("prompt_tokens") or 0,
        "completion_tokens": reported.get("completion_tokens") or 0,
    }
    details = reported.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if cached is not None:
        usage["cached_tokens"] = cached
    return usage
