"""Recorded tool outputs, per organization: how an evaluation runs the real tool chain hermetically.

The evaluation runner (`evals_app`) loads a scenario into a throwaway organization and registers
a `Replay` for that organization's id. From then on, the tool chain (`tools/invoke.py:_execute`)
answers a call of that organization to a tool the replay covers from the recordings instead of
running the tool's handler. Everything around the handler stays real: argument validation, the
review gate, the timeout, the audit row, the budget and the metrics. Calls of every other
organization, and tools the replay does not cover (inventory tools reading the loaded estate),
run for real.

Matching (first match wins; recordings whose arguments equal the call's exactly go first):

- `exact`: the call's arguments equal the recorded ones.
- `subset`: every recorded argument is present in the call with the same value.
- `contains`: every recorded argument, as text, occurs in the call's value (case and runs of
  whitespace ignored). The usual choice for PromQL/LogQL, where a model words a query its own way.
- `regex`: every recorded argument is a regular expression found in the call's value.
- `any`: the tool name alone matches.

A covered call that matches no recording gets `NO_DATA`, the answer of a back end that holds
nothing for the query, so an unexpected query is neither an error nor a way to the live system.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from agents_app.toolsets.contract import Handler, ToolContext, ToolError

Matcher = Literal["exact", "subset", "contains", "regex", "any"]
MATCHERS: tuple[str, ...] = ("exact", "subset", "contains", "regex", "any")

NO_DATA: dict = {
    "status": "no_data",
    "message": "No data: the back end returned nothing for this query in the requested window.",
}


@dataclass(frozen=True)
class Recording:
    """One recorded answer: the tool, the arguments it answers and what the tool returned."""

    tool: str
    arguments: dict = field(default_factory=dict)
    match: Matcher = "exact"
    output: Any = None
    error: str = ""  # a recorded failure: the call ends with this ToolError message

    def __post_init__(self) -> None:
        if self.match not in MATCHERS:
            raise ValueError(f"unknown matcher {self.match!r}; expected one of {', '.join(MATCHERS)}")

    def matches(self, arguments: dict) -> bool:
        if self.match == "any":
            return True
        if self.match == "exact":
            return _normal(arguments) == _normal(self.arguments)
        for key, wanted in self.arguments.items():
            if key not in arguments:
                return False
            if not _value_matches(self.match, wanted, arguments[key]):
                return False
        return True


def _normal(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _text(value: Any) -> str:
    raw = value if isinstance(value, str) else _normal(value)
    return re.sub(r"\s+", " ", raw).strip().lower()


def _value_matches(matcher: str, wanted: Any, actual: Any) -> bool:
    if matcher == "subset":
        return _normal(wanted) == _normal(actual)
    if matcher == "contains":
        return _text(wanted) in _text(actual)
    return re.search(str(wanted), actual if isinstance(actual, str) else _normal(actual)) is not None


@dataclass(frozen=True)
class Replay:
    """The recordings of one scenario and the names of the tools they stand in for."""

    recordings: tuple[Recording, ...]
    tools: frozenset[str]
    label: str = ""

    def covers(self, tool_name: str) -> bool:
        return tool_name in self.tools

    def find(self, tool_name: str, arguments: dict) -> Recording | None:
        candidates = [r for r in self.recordings if r.tool == tool_name]
        exact = [r for r in candidates if _normal(r.arguments) == _normal(arguments)]
        for recording in exact + candidates:
            if recording.matches(arguments):
                return recording
        return None

    def answer(self, tool_name: str, arguments: dict) -> Any:
        """What the tool "returned": the recording's output, its error raised, or NO_DATA."""
        recording = self.find(tool_name, arguments)
        if recording is None:
            return dict(NO_DATA)
        if recording.error:
            raise ToolError(recording.error)
        return recording.output


_lock = threading.Lock()
_replays: dict[int, Replay] = {}


def register(organization_id: int, replay: Replay) -> None:
    with _lock:
        _replays[organization_id] = replay


def unregister(organization_id: int) -> None:
    with _lock:
        _replays.pop(organization_id, None)


def registered(organization_id: int) -> Replay | None:
    with _lock:
        return _replays.get(organization_id)


def registered_organizations() -> list[int]:
    """The organizations whose tool calls are being replayed right now (none outside an eval run)."""
    with _lock:
        return sorted(_replays)


@contextmanager
def replaying(organization_id: int, replay: Replay) -> Iterator[Replay]:
    """Register `replay` for the block; it is removed afterwards whatever happened."""
    register(organization_id, replay)
    try:
        yield replay
    finally:
        unregister(organization_id)


def handler_for(tool_name: str, ctx: ToolContext) -> Handler | None:
    """The stand-in handler when a replay covers this call, None to run the real tool."""
    replay = registered(ctx.organization_id)
    if replay is None or not replay.covers(tool_name):
        return None

    async def replayed(_ctx: ToolContext, **arguments: Any) -> Any:
        return replay.answer(tool_name, arguments)

    return replayed
