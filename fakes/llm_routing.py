"""Scripting the fake LLM per agent, for runtime tests where a coordinator and workers talk to the
same server concurrently: each request is routed by the persona named in its system reminder."""

from __future__ import annotations

import re
import threading
from collections import defaultdict, deque
from collections.abc import Callable

from fakes.openai_server import RecordedRequest, Reply, error

AGENT = re.compile(r"You are the `([^`]+)` agent")


def agent_of(request: RecordedRequest) -> str:
    for message in reversed(request.messages):
        if message.get("role") == "system":
            found = AGENT.search(message.get("content") or "")
            if found:
                return found.group(1)
    return "?"


class ByAgent:
    """Router: a queue of replies (or functions of the request) per persona name."""

    def __init__(self) -> None:
        self._queues: dict[str, deque] = defaultdict(deque)
        self._lock = threading.Lock()
        self.seen: dict[str, list[RecordedRequest]] = defaultdict(list)

    def add(self, agent: str, *replies: Reply | Callable[[RecordedRequest], Reply]) -> ByAgent:
        with self._lock:
            self._queues[agent].extend(replies)
        return self

    def __call__(self, request: RecordedRequest) -> Reply:
        agent = agent_of(request)
        with self._lock:
            self.seen[agent].append(request)
            queue = self._queues[agent]
            reply = queue.popleft() if queue else None
        if reply is None:
            return error(400, f"fake LLM: nothing scripted for {agent}")
        return reply(request) if callable(reply) else reply


def tool_messages(request: RecordedRequest) -> list[dict]:
    return [m for m in request.messages if m.get("role") == "tool"]
