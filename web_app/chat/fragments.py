"""Runtime events rendered as HTMX out-of-band fragments for the chat page.

Pure functions of (event, state): the consumer sends what they return. Everything the model or a
tool produced is escaped by the templates; only the final answer goes through the Markdown
sanitiser. The same templates render the persisted transcript, so a reload looks like the stream.
"""

from __future__ import annotations

import json
from typing import Any

from django.template.loader import render_to_string
from django.utils.html import escape

from web_app.charts import chart_for_tool
from web_app.rendering import render_markdown

PREVIEW_CHARS = 4000
ARGS_CHARS = 160
CONTROL_TOOLS = {"AgentTool", "SendMessage", "TaskStop"}


def short_arguments(raw: Any) -> str:
    """One line of `key=value` pairs for a chip, from the arguments as the LLM sent them."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return raw[:ARGS_CHARS]
    if isinstance(raw, dict):
        text = ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in raw.items())
    else:
        text = json.dumps(raw)
    return text if len(text) <= ARGS_CHARS else text[: ARGS_CHARS - 1] + "…"


def result_text(content: Any) -> str:
    if isinstance(content, str):
        text = content
    else:
        text = json.dumps(content, indent=2, ensure_ascii=False, default=str)
    return (
        text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + f"\n… ({len(text)} characters in all)"
    )


def chip_context(
    call_id: str,
    name: str,
    arguments: Any,
    status: str = "running",
    content: Any = None,
    duration_ms: int | None = None,
) -> dict:
    return {
        "call_id": call_id,
        "name": name,
        "args": short_arguments(arguments),
        "status": status,
        "result": result_text(content) if content is not None else "",
        "duration_ms": duration_ms,
        "chart": chart_for_tool(name, content) if content is not None and status == "ok" else "",
    }


def _oob(template: str, **context) -> str:
    return render_to_string(f"chat/{template}", context)


def turn_started(turn: int, user_text: str, chat_session_id: int, title: str = "") -> str:
    return _oob(
        "_turn_started.html", turn=turn, user_text=user_text, chat_session_id=chat_session_id, title=title
    )


def text_delta(turn: int, text: str) -> str:
    return f'<span hx-swap-oob="beforeend:#stream-{turn}">{escape(text)}</span>'


def tool_started(turn: int, event: dict) -> str:
    if event.get("name") in CONTROL_TOOLS:
        return ""
    chip = chip_context(event["call_id"], event["name"], event.get("arguments_raw", ""))
    return _oob("_chip_new.html", turn=turn, chip=chip)


def _finished_chip(event: dict) -> dict:
    return chip_context(
        event["call_id"],
        event["name"],
        event.get("arguments_raw", ""),
        event.get("status", "ok"),
        event.get("content", ""),
        event.get("duration_ms"),
    )


def tool_ended(turn: int, event: dict) -> str:
    if event.get("name") in CONTROL_TOOLS:
        return control_outcome(turn, event)
    return _oob("_chip.html", chip=_finished_chip(event), oob=True)


def control_outcome(turn: int, event: dict) -> str:
    """A control tool gets no chip, except when it did not do its job: a deduped or refused
    dispatch is shown plainly rather than silently."""
    if event.get("status") in ("ok", "killed"):
        return ""
    return _oob("_chip_new.html", turn=turn, chip=_finished_chip(event))


def note(turn: int, text: str) -> str:
    return _oob("_note_new.html", turn=turn, text=text)


def for_viewer(text: str, viewer: str = "") -> str:
    """A stop reason as the person reading it should see it: "Stopped by you" for their own stop."""
    text = (text or "").strip()
    if not text.lower().startswith("stopped"):
        return text
    text = "S" + text[1:]
    if viewer and text.lower().startswith(f"stopped by {viewer.lower()}"):
        text = "Stopped by you" + text[len(f"stopped by {viewer}") :]
    return text


def stopped_label(status: str, error: str, viewer: str = "") -> str:
    """The neutral line of a stopped agent ("Stopped by you"), or "" when it was not stopped."""
    if status != "killed":
        return ""
    return for_viewer(error if (error or "").lower().startswith("stopped") else "stopped", viewer)


def tile_context(event: dict, viewer: str = "") -> dict:
    status = event.get("status", "pending")
    stopped = stopped_label(status, event.get("error", ""), viewer)
    return {
        "id": event["session"],
        "persona": event.get("persona", ""),
        "description": event.get("description", ""),
        "status": status,
        "result": render_markdown(event["result"]) if event.get("result") else "",
        "error": "" if stopped else event.get("error", ""),
        "stopped": stopped,
        "activity": event.get("activity", ""),
        "started": event.get("started", ""),
    }


def worker_started(turn: int, event: dict, chat_session_id: int) -> str:
    return _oob("_tile_new.html", turn=turn, tile=tile_context(event), chat_session_id=chat_session_id)


def worker_changed(tile: dict, chat_session_id: int) -> str:
    return _oob("_tile.html", tile=tile, chat_session_id=chat_session_id, oob=True)


def worker_activity(worker_id: int, text: str) -> str:
    return (
        f'<span class="tile-activity" id="tile-activity-{worker_id}" hx-swap-oob="true">{escape(text)}</span>'
    )


def turn_ended(turn: int, event: dict, chat_session_id: int, viewer: str = "") -> str:
    answer = render_markdown(event["text"]) if event.get("text") else ""
    stopped = for_viewer(event.get("stopped", ""), viewer)
    return _oob(
        "_turn_ended.html",
        turn=turn,
        answer=answer,
        stopped=stopped,
        error="" if stopped else event.get("error", ""),
        chat_session_id=chat_session_id,
    )


def composer_held(text: str) -> str:
    """The server refused a message because a turn runs (another tab, the API): the page puts the
    text back in the composer and sends it when the turn ends."""
    return '<div id="composer-held" hx-swap-oob="true" hidden data-text="' + escape(text) + '"></div>'


def error_bubble(text: str) -> str:
    return _oob("_error_new.html", text=text)


def proposal_card(card: dict, oob: bool = False) -> str:
    """The dual-sign approval card (docs/review-gate.md): what would change, where, why, and the
    reviewer's verdict."""
    return _oob("_proposal.html", p=card, oob=oob)


def proposal_event(turn: int, kind: str, card: dict) -> str:
    """`proposal.pending` appends the card to the turn; `proposal.decided` redraws it in place."""
    if kind == "proposal.pending":
        return f'<div hx-swap-oob="beforeend:#activity-{turn}">{proposal_card(card)}</div>'
    return proposal_card(card, oob=True)
