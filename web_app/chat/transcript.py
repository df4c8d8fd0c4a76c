"""The persisted transcript of a chat, grouped into turns, for the page and for reconnects.

A turn is a user message and everything up to the next one: the coordinator's tool calls (from
the audit log), the workers it dispatched (their session rows), its notes, and its answer or
error. Built from the one session tree (`web_app.tree`), so the page, the API and the audit pages
agree, with a fixed number of queries whatever the length of the chat.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from datetime import timedelta

from django.urls import reverse

from chat_app.models import ChatMessage, ChatSession, MessageKind, MessageRole, SessionStatus
from web_app.chat.fragments import CONTROL_TOOLS, chip_context, for_viewer, stopped_label, tool_line
from web_app.rendering import EstateLinks, render_answer
from web_app.tree import build_tree, walk


@dataclass
class Item:
    kind: str  # chip | tile | note | lead | proposal
    at: object
    data: object


@dataclass
class Turn:
    key: int
    user_text: str
    at: object
    items: list[Item] = field(default_factory=list)
    answer: str = ""
    answered_at: object = None
    error: str = ""
    stopped: str = ""
    running: bool = False


def tile_from_node(
    node: dict, links: EstateLinks | None = None, audit: bool = False, viewer: str = ""
) -> dict:
    """A worker's tile as it was: its tool calls (from the audit rows) and its result."""
    stopped = stopped_label(node["status"], node["error"], viewer)
    tools = []
    for entry in node["timeline"]:
        if entry["type"] != "call":
            continue
        line = tool_line(
            entry["tool_call_id"] or f"a{entry['id']}",
            entry["tool"],
            entry["arguments"],
            entry["status"],
            entry["duration_ms"],
            reverse("audit-call", args=[entry["id"]]) if audit else "",
        )
        line["index"] = len(tools)
        tools.append(line)
    return {
        "id": node["id"],
        "persona": node["persona"],
        "description": node["description"],
        "status": node["status"],
        "result": render_answer(node["result"], links) if node["result"] else "",
        "error": "" if stopped else node["error"],
        "stopped": stopped,
        "activity": "",
        "started": node["started_at"].isoformat() if node["started_at"] else "",
        "tools": tools,
        "answered": False,
        "audit_url": reverse("audit-session", args=[node["id"]]) + f"#session-{node['id']}" if audit else "",
    }


def build_turns(
    chat: ChatSession,
    last: int | None = None,
    *,
    links: EstateLinks | None = None,
    audit: bool = False,
    viewer: str = "",
) -> list[Turn]:
    """The chat's turns (the last `last` of them) from the one session tree (`web_app.tree`).

    `links`: device links the viewer may follow; `audit`: whether the viewer may open audit pages
    (then chips and tiles link to their audit records); `viewer`: the reader's username, so their
    own stop reads "Stopped by you"."""
    since = None
    if last is not None:
        asked = ChatMessage.objects.filter(session=chat, role=MessageRole.USER).order_by("-seq")
        starts = list(asked.values_list("created_at", flat=True)[:last])
        if not starts:
            return []
        since = starts[-1]
    tree = build_tree(chat, messages="root", since=since)
    turns: list[Turn] = []
    entries = tree["timeline"]
    called_at = {e["tool_call_id"]: e["at"] for e in entries if e["type"] == "call" and e["tool_call_id"]}
    for message in sorted((e for e in entries if e["type"] == "message"), key=lambda e: e["seq"]):
        _add_message(turns, message, links, viewer, called_at)
    if not turns:
        return turns
    starts = [t.at for t in turns]

    def owner(at) -> Turn:
        return turns[max(bisect.bisect_right(starts, at) - 1, 0)]

    for call in (e for e in entries if e["type"] == "call"):
        if call["tool"] in CONTROL_TOOLS and call["status"] in ("ok", "killed"):
            continue  # a dispatch shows as its worker's tile, not as a chip
        chip = chip_context(
            call["tool_call_id"] or f"a{call['id']}",
            call["tool"],
            call["arguments"],
            call["status"],
            call["result"],
            call["duration_ms"],
            reverse("audit-call", args=[call["id"]]) if audit else "",
        )
        owner(call["at"]).items.append(Item("chip", call["at"], chip))
    # Every agent of the tree, not only direct children: a reviewer spawned under a worker's gated
    # call shows as a tile after a reload just as it did live.
    for node in walk(tree):
        if node["id"] != tree["id"]:
            tile = tile_from_node(node, links, audit, viewer)
            owner(node["created_at"]).items.append(Item("tile", node["created_at"], tile))
        for card in node["proposals"]:
            if card["requires_human"]:  # dual-sign cards, with their buttons while they wait
                owner(card["created_at"]).items.append(Item("proposal", card["created_at"], card))
    for turn in turns:
        turn.items.sort(key=lambda item: item.at)
        if turn.answer or turn.error:  # the coordinator replied: its reply is the answer
            for item in turn.items:
                if item.kind == "tile":
                    item.data["answered"] = True
    if chat.status == SessionStatus.RUNNING:
        turns[-1].running = True
    return turns


def _lead_at(message: dict, called_at: dict):
    """A lead-in is saved with its step, after the calls it led to ran: it is placed just before
    the first of them, where it streamed, not below their chips and tiles."""
    ids = [c.get("id") for c in message["tool_calls"] if isinstance(c, dict)]
    times = [called_at[i] for i in ids if i in called_at]
    return min(times) - timedelta(microseconds=1) if times else message["at"]


def _add_message(
    turns: list[Turn],
    message: dict,
    links: EstateLinks | None = None,
    viewer: str = "",
    called_at: dict | None = None,
) -> None:
    if message["role"] == MessageRole.USER:
        turns.append(Turn(message["id"], message["content"], message["at"]))
    elif turns and message["kind"] == MessageKind.NOTE:
        turns[-1].items.append(Item("note", message["at"], message["content"]))
    elif turns and message["kind"] == MessageKind.STOPPED:
        turns[-1].stopped = for_viewer(message["content"], viewer)
    elif turns and message["kind"] == MessageKind.ERROR:
        turns[-1].error = message["content"]
    elif turns and message["role"] == MessageRole.ASSISTANT and message["tool_calls"]:
        if (message["content"] or "").strip():  # what it said before the call, as it streamed
            at = _lead_at(message, called_at or {})
            turns[-1].items.append(Item("lead", at, render_answer(message["content"], links)))
    elif turns and message["role"] == MessageRole.ASSISTANT and message["content"]:
        turns[-1].answer = render_answer(message["content"], links)
        turns[-1].answered_at = message["at"]
