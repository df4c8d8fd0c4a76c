"""Where a turn's events go: every open websocket of the root session (through the channel-layer
group, so any process's sockets get them) and any local listener (the review gate, IM bridges,
tests). The kernel's own events are adapted here into the runtime's (`agents_app/runtime/events.py`)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from channels.layers import get_channel_layer

from agents_app.kernel import events as kernel
from agents_app.runtime import events
from chat_app.groups import session_group

log = logging.getLogger(__name__)

Listener = Callable[[events.RuntimeEvent], Awaitable[None]]


@dataclass
class Publisher:
    """Sends runtime events to every open websocket of the root session, and to local listeners."""

    root_session_id: int
    listeners: list[Listener] = field(default_factory=list)

    async def publish(self, event: events.RuntimeEvent) -> None:
        layer = get_channel_layer()
        if layer is not None:
            try:
                await layer.group_send(
                    session_group(self.root_session_id), {"type": "turn.event", "event": event.to_message()}
                )
            except Exception:  # noqa: BLE001 - a broken layer must not kill the turn
                log.exception("could not publish %s", event.name)
        for listener in self.listeners:
            await listener(event)


@dataclass
class KernelSink:
    """Adapts kernel events to runtime events for one agent session."""

    publisher: Publisher
    session_id: int
    is_worker: bool

    async def emit(self, event: kernel.AgentEvent) -> None:
        if self.is_worker and isinstance(event, kernel.TextDelta):
            return  # the user never sees a worker's raw transcript (docs/chat.md)
        await self.publisher.publish(self.adapt(event))

    def adapt(self, event: kernel.AgentEvent) -> events.RuntimeEvent:
        about = {"session": self.session_id, "worker": self.is_worker}
        match event:
            case kernel.TextDelta(text=text):
                return events.TextDelta(**about, text=text)
            case kernel.ToolStart():
                return events.ToolStarted(
                    **about, call_id=event.call_id, tool=event.name, arguments_raw=event.arguments_raw
                )
            case kernel.ToolEnd():
                return events.ToolEnded(
                    **about,
                    call_id=event.call_id,
                    tool=event.name,
                    status=event.status,
                    content=event.content,
                    duration_ms=event.duration_ms,
                )
            case kernel.Final(text=text):
                return events.AgentFinal(**about, text=text)
            case kernel.Error(message=message):
                return events.AgentError(**about, message=message)
            case kernel.Retrying():
                return events.LLMRetrying(
                    **about,
                    reason=event.reason,
                    status=event.status,
                    attempt=event.attempt,
                    attempts=event.attempts,
                    delay=event.delay,
                )
        raise TypeError(f"not a kernel event: {event!r}")
