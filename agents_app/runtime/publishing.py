"""Where a turn's events go: every open websocket of the root session (through the channel-layer
group, so any process's sockets get them) and any local listener (the review gate, IM bridges,
tests). The kernel's own events are adapted here into the runtime's (`agents_app/runtime/events.py`)."""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
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
    # What the root's own agent has streamed this turn: the person saw it, so a turn that crashes
    # keeps it as its partial answer (Runtime._finish_turn).
    streamed: list[str] = field(default_factory=list)

    async def publish(self, event: events.RuntimeEvent) -> None:
        if isinstance(event, events.TextDelta) and not event.worker and event.session == self.root_session_id:
            self.streamed.append(event.text)
        layer = get_channel_layer()
        if layer is not None:
            message = {"type": "turn.event", "event": event.to_message()}
            await send_to_group(layer, session_group(self.root_session_id), message, event.name)
        for listener in self.listeners:
            await listener(event)


# While the layer is down, a publish is tried at most this often (each try may wait out a connect
# timeout, and a streaming turn publishes many events a second); events in between are dropped.
OUTAGE_RETRY_SECONDS = 1.0


@dataclass
class _Outage:
    """This process's view of the channel layer: down since when, and how many events it lost."""

    since: float | None = None
    lost: int = 0
    next_try: float = 0.0


# Per layer instance (each process has one per alias; the tests make a fresh one per test).
_outages: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


async def send_to_group(layer, group: str, message: dict, kind: str) -> bool:
    """`group_send`, retried once on fresh connections: the first send after a Redis restart may
    meet a pooled connection the server closed. When that fails too (Redis really down) the outage
    is logged once, naming the event, and every event is swallowed until a send works again: a
    broken layer must not kill or stall the turn, whose rows keep the truth for the page to redraw.
    True if the message went out."""
    outage = _outages.setdefault(layer, _Outage())
    now = time.monotonic()
    if outage.since is not None and now < outage.next_try:
        outage.lost += 1
        return False
    attempts = 1 if outage.since is not None else 2
    for attempt in range(1, attempts + 1):
        try:
            await layer.group_send(group, message)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any transport failure
            if attempt < attempts:
                await _drop_idle_connections(layer)
                continue
            _lost(outage, kind, group, exc)
            return False
        if outage.since is not None:
            log.info("publishing again; %d event(s) lost while the channel layer was down", outage.lost)
            outage.since, outage.lost = None, 0
        return True
    return False


def _lost(outage: _Outage, kind: str, group: str, exc: Exception) -> None:
    now = time.monotonic()
    if outage.since is None:
        log.warning("could not publish %s to %s: %s: %s", kind, group, type(exc).__name__, exc)
        outage.since = now
    outage.lost += 1
    outage.next_try = now + OUTAGE_RETRY_SECONDS


async def _drop_idle_connections(layer) -> None:
    """Close the Redis layer's idle pooled connections of this loop, so the retry dials anew.
    Connections in use (a socket's blocking read) are left alone; other layers have no pool."""
    ring = getattr(layer, "ring_size", 0)
    for index in range(ring):
        try:
            await layer.connection(index).connection_pool.disconnect(inuse_connections=False)
        except Exception:  # noqa: BLE001 - best effort: the retry reconnects anyway
            log.debug("could not drop the idle connections of shard %s", index)


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
