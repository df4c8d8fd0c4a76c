"""Where a turn's events go: every open websocket of the root session (through the channel-layer
group, so any process's sockets get them) and any local listener (the review gate, IM bridges,
tests). The kernel's own events are adapted here into the runtime's event names."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any

from channels.layers import get_channel_layer

from chat_app.groups import session_group

log = logging.getLogger(__name__)

Listener = Callable[[dict], Awaitable[None]]


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


@dataclass
class Publisher:
    """Sends runtime events to every open websocket of the root session, and to local listeners."""

    root_session_id: int
    listeners: list[Listener] = field(default_factory=list)

    async def publish(self, event: dict) -> None:
        event = _jsonable(event)
        layer = get_channel_layer()
        if layer is not None:
            try:
                await layer.group_send(
                    session_group(self.root_session_id), {"type": "turn.event", "event": event}
                )
            except Exception:  # noqa: BLE001 - a broken layer must not kill the turn
                log.exception("could not publish %s", event.get("event"))
        for listener in self.listeners:
            await listener(event)


@dataclass
class KernelSink:
    """Adapts kernel events to runtime events for one agent session."""

    publisher: Publisher
    session_id: int
    is_worker: bool

    async def emit(self, event: Any) -> None:
        kind = type(event).__name__
        data = asdict(event) if is_dataclass(event) else dict(event)
        if self.is_worker and kind == "TextDelta":
            return  # the user never sees a worker's raw transcript (docs/chat.md)
        names = {
            "TextDelta": "text.delta",
            "ToolStart": "tool.started",
            "ToolEnd": "tool.ended",
            "Final": "agent.final",
            "Error": "agent.error",
        }
        await self.publisher.publish(
            {"event": names.get(kind, kind), "session": self.session_id, "worker": self.is_worker, **data}
        )
