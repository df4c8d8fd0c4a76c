"""The provider contract: one streaming chat call, whatever the model behind it.

A provider yields `LLMDelta` text pieces as they arrive and ends with exactly one `LLMCompletion`
(the whole assistant message, its tool calls, token usage). Failures are `LLMError`, with a
message a user can act on and a `retryable` flag; providers retry transient failures themselves,
so an `LLMError` reaching the kernel means the call is lost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable


class LLMError(Exception):
    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None):
        self.message = message
        self.retryable = retryable
        self.status = status
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


LLMEvent = LLMDelta | LLMCompletion


@runtime_checkable
class LLMProvider(Protocol):
    name: str

    def default_model(self) -> str: ...

    def stream_chat(
        self,
        messages: list[dict],
        tools: list[dict],
        model: str | None = None,
        **options,
    ) -> AsyncIterator[LLMEvent]: ...
