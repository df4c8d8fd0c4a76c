"""The persisted transcript of a chat, grouped into turns, for the page and for reconnects.

A turn is a user message and everything up to the next one: the coordinator's tool calls (from
the audit log), the workers it dispatched (their session rows), its notes, and its answer or
error. Built with three queries whatever the length of the chat.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from chat_app.models import ChatMessage, ChatSession, MessageKind, MessageRole, SessionStatus
from web_app.chat.fragments import CONTROL_TOOLS, chip_context
from web_app.rendering import render_markdown


@dataclass
class Item:
    kind: str  # chip | tile | note | proposal
    at: object
    data: object


@dataclass
class Turn:
    key: int
    user_text: str
    at: object
    items: list[Item] = field(default_factory=list)
    answer: str = ""
    error: str = ""
    running: bool = False


def tile_from_row(row: ChatSession) -> dict:
    return {
        "id": row.pk,
        "persona": row.agent_id,
        "description": row.description,
        "status": row.status,
        "result": render_markdown(row.result) if row.result else "",
        "error": row.error,
        "activity": "",
        "started": row.started_at.isoformat() if row.started_at else "",
    }


def build_turns(chat: ChatSession, last: int | None = None) -> list[Turn]:
    from audit_app.models import AuditLog

    messages = list(
        ChatMessage.objects.filter(session=chat)
        .order_by("seq")
        .only("pk", "role", "kind", "content", "tool_calls", "created_at")
    )
    turns: list[Turn] = []
    for message in messages:
        if message.role == MessageRole.USER:
            turns.append(Turn(message.pk, message.content, message.created_at))
        elif turns and message.kind == MessageKind.NOTE:
            turns[-1].items.append(Item("note", message.created_at, message.content))
        elif turns and message.kind == MessageKind.ERROR:
            turns[-1].error = message.content
        elif turns and message.role == MessageRole.ASSISTANT and not message.tool_calls and message.content:
            turns[-1].answer = render_markdown(message.content)
    if last is not None:
        turns = turns[-last:]
    if not turns:
        return turns
    since = turns[0].at
    starts = [t.at for t in turns]

    def owner(at) -> Turn:
        return turns[max(bisect.bisect_right(starts, at) - 1, 0)]

    calls = AuditLog.objects.filter(session=chat, started_at__gte=since).exclude(
        tool__in=CONTROL_TOOLS, status__in=("ok", "killed")
    )
    for call in calls.order_by("started_at"):
        chip = chip_context(
            call.tool_call_id or f"a{call.pk}",
            call.tool,
            call.arguments,
            call.status,
            call.result,
            call.duration_ms,
        )
        owner(call.started_at).items.append(Item("chip", call.started_at, chip))
    # Every agent of the tree, not only direct children: a reviewer spawned under a worker's gated
    # call shows as a tile after a reload just as it did live.
    workers = ChatSession.objects.filter(root_session=chat, created_at__gte=since).order_by("created_at")
    for worker in workers:
        owner(worker.created_at).items.append(Item("tile", worker.created_at, tile_from_row(worker)))
    _add_proposals(chat, since, owner)
    for turn in turns:
        turn.items.sort(key=lambda item: item.at)
    if chat.status == SessionStatus.RUNNING:
        turns[-1].running = True
    return turns


def _add_proposals(chat: ChatSession, since, owner) -> None:
    """Dual-sign approval cards, so a reload shows the card (and its buttons while it waits)."""
    from agents_app.models import MutatingProposal
    from agents_app.proposals import card_data

    cards = MutatingProposal.objects.filter(root_session=chat, requires_human=True, created_at__gte=since)
    for proposal in cards.order_by("created_at"):
        owner(proposal.created_at).items.append(Item("proposal", proposal.created_at, card_data(proposal)))
