"""The persisted transcript of a chat, grouped into turns, for the page and for reconnects.

A turn is a user message and everything up to the next one: the coordinator's tool calls (from
the audit log), the workers it dispatched (their session rows), its notes, and its answer or
error. Built from the one session tree (`web_app.tree`), so the page, the API and the audit pages
agree, with a fixed number of queries whatever the length of the chat.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from chat_app.models import ChatMessage, ChatSession, MessageKind, MessageRole, SessionStatus
from web_app.chat.fragments import CONTROL_TOOLS, chip_context, for_viewer, stopped_label
from web_app.rendering import render_markdown
from web_app.tree import build_tree, walk


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
    stopped: str = ""
    running: bool = False


def tile_from_node(node: dict, viewer: str = "") -> dict:
    stopped = stopped_label(node["status"], node["error"], viewer)
    return {
        "id": node["id"],
        "persona": node["persona"],
        "description": node["description"],
        "status": node["status"],
        "result": render_markdown(node["result"]) if node["result"] else "",
        "error": "" if stopped else node["error"],
        "stopped": stopped,
        "activity": "",
        "started": node["started_at"].isoformat() if node["started_at"] else "",
    }


def build_turns(chat: ChatSession, last: int | None = None, viewer: str = "") -> list[Turn]:
    """The chat's turns (the last `last` of them) from the one session tree (`web_app.tree`)."""
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
    for message in sorted((e for e in entries if e["type"] == "message"), key=lambda e: e["seq"]):
        _add_message(turns, message, viewer)
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
        )
        owner(call["at"]).items.append(Item("chip", call["at"], chip))
    # Every agent of the tree, not only direct children: a reviewer spawned under a worker's gated
    # call shows as a tile after a reload just as it did live.
    for node in walk(tree):
        if node["id"] != tree["id"]:
            owner(node["created_at"]).items.append(
                Item("tile", node["created_at"], tile_from_node(node, viewer))
            )
        for card in node["proposals"]:
            if card["requires_human"]:  # dual-sign cards, with their buttons while they wait
                owner(card["created_at"]).items.append(Item("proposal", card["created_at"], card))
    for turn in turns:
        turn.items.sort(key=lambda item: item.at)
    if chat.status == SessionStatus.RUNNING:
        turns[-1].running = True
    return turns


def _add_message(turns: list[Turn], message: dict, viewer: str = "") -> None:
    if message["role"] == MessageRole.USER:
        turns.append(Turn(message["id"], message["content"], message["at"]))
    elif turns and message["kind"] == MessageKind.NOTE:
        turns[-1].items.append(Item("note", message["at"], message["content"]))
    elif turns and message["kind"] == MessageKind.STOPPED:
        turns[-1].stopped = for_viewer(message["content"], viewer)
    elif turns and message["kind"] == MessageKind.ERROR:
        turns[-1].error = message["content"]
    elif (
        turns
        and message["role"] == MessageRole.ASSISTANT
        and not message["tool_calls"]
        and message["content"]
    ):
        turns[-1].answer = render_markdown(message["content"])
