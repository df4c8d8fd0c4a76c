"""What a running agent tells the outside world.

The kernel emits these through a sink (`async def emit(event)`); the runtime turns them into
websocket fragments and persisted rows. They are plain values so a sink can serialise them
(`dataclasses.asdict`) to cross a process boundary.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ToolStart:
    call_id: str
    name: str
    # Secrets are already redacted: this is the display and persistence copy, never executed.
    arguments_raw: str


@dataclass(frozen=True)
class ToolEnd:
    call_id: str
    name: str
    status: str
    content: str
    duration_ms: int


@dataclass(frozen=True)
class Final:
    text: str


@dataclass(frozen=True)
class Error:
    message: str


@dataclass(frozen=True)
class Retrying:
    """The model call failed and the provider tries again in `delay` s (attempt `attempt` of
    `attempts`): the person waiting learns why nothing arrives yet."""

    reason: str
    attempt: int
    attempts: int
    delay: float
    status: int | None = None


AgentEvent = TextDelta | ToolStart | ToolEnd | Final | Error | Retrying


class EventSink(Protocol):
    async def emit(self, event: AgentEvent) -> None: ...


class NullSink:
    """A sink that drops everything, for callers that only want the result."""

    async def emit(self, event: AgentEvent) -> None:
        return None


class ListSink:
    """A sink that keeps every event in order (tests, the CLI)."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    async def emit(self, event: AgentEvent) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list:
        return [event for event in self.events if isinstance(event, kind)]
