"""The provider contract: one streaming chat call, whatever the model behind it.

A provider yields `LLMDelta` text pieces as they arrive and ends with exactly one `LLMCompletion`
(the whole assistant message, its tool calls, token usage). Failures are `LLMError`, with a
message a user can act on and a `retryable` flag; providers retry transient failures themselves,
so an `LLMError` reaching the kernel means the call is lost. While a provider waits to retry it
yields an `LLMRetrying`, so the person waiting sees why nothing arrives yet; a consumer that does
not care (the eval judge) simply skips it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class LLMError(Exception):
    """`retry_after`: the seconds the endpoint asked to wait (Retry-After), when it said so.
    `partial`: the text already streamed when the call broke, so the caller can keep it."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status: int | None = None,
        retry_after: float | None = None,
    ):
        self.message = message
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after
        self.partial = ""
        super().__init__(message)


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments_raw: str  # exactly as the model produced it, possibly invalid JSON


@dataclass(frozen=True)
class LLMDelta:
    text: str


@dataclass(frozen=True)
class LLMCompletion:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0})
    finish_reason: str = "stop"
    model: str = ""


@dataclass(frozen=True)
class LLMRetrying:
    """The call failed and will be tried again in `delay` seconds: nothing is lost yet.
    `attempt` is the attempt about to be made (2 for the first retry) out of `attempts`."""

    reason: str  # short: "the model answered HTTP 429", "the connection broke"
    attempt: int
    attempts: int
    delay: float
    status: int | None = None


LLMEvent = LLMDelta | LLMCompletion | LLMRetrying


@runtime_checkable
class LLMProvider(Protocol):
    """A model endpoint. It may also set `sees_every_tool = True`: the kernel then sends it every
    tool's schema instead of deferring some behind ToolSearch (the offline model does)."""

    name: str

    def default_model(self) -> str: ...

    def stream_chat(
        self,
        messages: list[dict],
        tools: list[dict],
        model: str | None = None,
        **options,
    ) -> AsyncIterator[LLMEvent]: ...
