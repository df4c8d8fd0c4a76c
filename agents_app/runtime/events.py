"""Every event a turn publishes, by name and fields: the one vocabulary of the runtime, the review
gate, the executors and whatever listens (chat sockets and fragments, IM bridges, `ongrid_chat`,
investigations).

An event crosses processes as a plain dict, `{"event": <name>, <field>: <value>, ...}`, on the
channel-layer group of the turn's root session (`to_message`); a receiver turns it back into its
class with `parse`. `session` is the session the event is about (the coordinator's, or a
worker's); `worker` says which of the two for the agent events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from functools import cache
from typing import ClassVar


@dataclass(frozen=True)
class RuntimeEvent:
    name: ClassVar[str] = ""
    session: int

    def to_message(self) -> dict:
        """The event as it travels: JSON-safe (dates and the like become text). A field may travel
        under another key (`metadata={"wire": ...}`): a tool's name goes as "name"."""
        wire = {key: getattr(self, name) for name, key in _wire_names(type(self))}
        message = {"event": self.name, **wire}
        if all(type(value) in _PLAIN for value in wire.values()):
            return message  # most events (every text delta): already JSON, no round trip to pay
        return json.loads(json.dumps(message, default=str))


@cache
def _wire_names(kind: type) -> tuple[tuple[str, str], ...]:
    """(field, key it travels under) of an event class, read once per class."""
    return tuple((f.name, f.metadata.get("wire", f.name)) for f in fields(kind))


# Field types that are JSON as they are (not their subclasses: an IntEnum or a str subclass goes
# through the round trip and travels as its plain value).
_PLAIN = frozenset({str, int, float, bool, type(None)})


# ---- the turn ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnQueued(RuntimeEvent):
    """The turn waits for a free slot of a worker process (docs/runtime.md)."""

    name: ClassVar[str] = "turn.queued"


@dataclass(frozen=True)
class TurnStarted(RuntimeEvent):
    name: ClassVar[str] = "turn.started"
    message_id: int | None = None
    user_text: str = ""


@dataclass(frozen=True)
class TurnEnded(RuntimeEvent):
    name: ClassVar[str] = "turn.ended"
    status: str = ""
    text: str = ""
    error: str = ""
    stopped: str = ""  # the stop line, when the turn was stopped
    message_id: int | None = None  # the row of the error or stop line, if one was written


@dataclass(frozen=True)
class Note(RuntimeEvent):
    """An intermediate message to the user (SendMessage)."""

    name: ClassVar[str] = "note"
    text: str = ""
    message_id: int | None = None


# ---- one agent's steps (the coordinator's, or a worker's) ---------------------------------------


@dataclass(frozen=True)
class TextDelta(RuntimeEvent):
    name: ClassVar[str] = "text.delta"
    worker: bool = False
    text: str = ""


@dataclass(frozen=True)
class ToolStarted(RuntimeEvent):
    name: ClassVar[str] = "tool.started"
    worker: bool = False
    call_id: str = ""
    tool: str = field(default="", metadata={"wire": "name"})
    arguments_raw: str = ""  # secrets already redacted: the display copy, never executed


@dataclass(frozen=True)
class ToolEnded(RuntimeEvent):
    name: ClassVar[str] = "tool.ended"
    worker: bool = False
    call_id: str = ""
    tool: str = field(default="", metadata={"wire": "name"})
    status: str = ""
    content: str = ""
    duration_ms: int = 0


@dataclass(frozen=True)
class AgentFinal(RuntimeEvent):
    name: ClassVar[str] = "agent.final"
    worker: bool = False
    text: str = ""


@dataclass(frozen=True)
class AgentError(RuntimeEvent):
    name: ClassVar[str] = "agent.error"
    worker: bool = False
    message: str = ""


@dataclass(frozen=True)
class LLMRetrying(RuntimeEvent):
    """The agent's model call failed and is tried again in `delay` s: the chat shows "Retrying…"
    until text arrives or the turn ends. Not persisted: it is news about a wait, not a result."""

    name: ClassVar[str] = "llm.retrying"
    worker: bool = False
    reason: str = ""
    status: int | None = None  # the HTTP status that failed, None for a broken connection
    attempt: int = 0  # the attempt about to be made (2 = the first retry)
    attempts: int = 0
    delay: float = 0.0


# ---- workers ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkerStarted(RuntimeEvent):
    name: ClassVar[str] = "worker.started"
    parent: int | None = None
    persona: str = ""
    description: str = ""
    status: str = "pending"
    call_id: str = ""  # the AgentTool (or review) call that spawned it


@dataclass(frozen=True)
class WorkerStatus(RuntimeEvent):
    name: ClassVar[str] = "worker.status"
    status: str = ""


@dataclass(frozen=True)
class WorkerEnded(RuntimeEvent):
    name: ClassVar[str] = "worker.ended"
    status: str = ""
    result: str = ""
    error: str = ""


# ---- the review gate ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ProposalPending(RuntimeEvent):
    """A dual-sign write waits for a person (docs/review-gate.md); `proposal` is describe_proposal's."""

    name: ClassVar[str] = "proposal.pending"
    proposal: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ProposalDecided(RuntimeEvent):
    name: ClassVar[str] = "proposal.decided"
    proposal: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ProposalExecuted(RuntimeEvent):
    """An approved dual-sign write has run: `proposal["outcome"]` says whether it succeeded."""

    name: ClassVar[str] = "proposal.executed"
    proposal: dict = field(default_factory=dict)


# What redraws an approval card: it appears, is decided, and its approved change has run.
PROPOSAL_EVENTS = (ProposalPending, ProposalDecided, ProposalExecuted)

EVENTS: dict[str, type[RuntimeEvent]] = {
    cls.name: cls
    for cls in (
        TurnQueued,
        TurnStarted,
        TurnEnded,
        Note,
        TextDelta,
        ToolStarted,
        ToolEnded,
        AgentFinal,
        AgentError,
        LLMRetrying,
        WorkerStarted,
        WorkerStatus,
        WorkerEnded,
        ProposalPending,
        ProposalDecided,
        ProposalExecuted,
    )
}


def parse(message: dict) -> RuntimeEvent | None:
    """The event a dict from the channel layer carries; None for a name this build does not know."""
    cls = EVENTS.get(message.get("event", ""))
    if cls is None:
        return None
    known = {f.name: f.metadata.get("wire", f.name) for f in fields(cls)}
    return cls(**{attr: message[wire] for attr, wire in known.items() if wire in message})
