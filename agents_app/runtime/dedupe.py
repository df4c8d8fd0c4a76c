"""Dispatch dedupe (docs/runtime.md): an identical AgentTool call within 120 s returns the earlier result
instead of spawning another worker. This is what stopped coordinator loops that re-dispatched the
same brief again and again. Keys include the root session, so two chats never share results.

The cache lives in the process that runs the turn; a turn never moves between processes, which
is where such loops happen."""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

TTL_SECONDS = 120.0
MAX_ENTRIES = 512


def canonical(prompt: str) -> str:
    """Whitespace-insensitive form of a brief: reflowed text is the same dispatch."""
    return " ".join(prompt.split())


def dispatch_key(root_session_id: int, subagent_type: str, prompt: str) -> str:
    digest = hashlib.sha256(f"{subagent_type}\x00{canonical(prompt)}".encode()).hexdigest()
    return f"{root_session_id}:{digest}"


@dataclass(frozen=True)
class Dispatched:
    worker_session_id: int
    status: str
    text: str
    at: float


class DispatchCache:
    def __init__(self, ttl: float = TTL_SECONDS, max_entries: int = MAX_ENTRIES, clock=time.monotonic):
        self._ttl = ttl
        self._max = max_entries
        self._clock = clock
        self._items: OrderedDict[str, Dispatched] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Dispatched | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            if self._clock() - item.at > self._ttl:
                del self._items[key]
                return None
            self._items.move_to_end(key)
            return item

    def put(self, key: str, worker_session_id: int, status: str, text: str) -> None:
        with self._lock:
            self._items[key] = Dispatched(worker_session_id, status, text, self._clock())
            self._items.move_to_end(key)
            while len(self._items) > self._max:
                self._items.popitem(last=False)


DISPATCHES = DispatchCache()
