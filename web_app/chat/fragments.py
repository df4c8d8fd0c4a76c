"""Runtime events rendered as HTMX out-of-band fragments for the chat page.

Pure functions of (event, state): the consumer sends what they return. Everything the model or a
tool produced is escaped by the templates; the coordinator's text (streamed so far, a lead-in,
the final answer) goes through the Markdown sanitiser instead. The same templates render the
persisted transcript, so a reload looks like the stream.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape
from django.utils.translation import gettext_lazy as _

from agents_app.api import control_tools, events
from chat_app.stops import for_viewer
from web_app.charts import chart_for_tool
from web_app.rendering import EstateLinks, render_answer, render_markdown  # noqa: F401 - used by the consumer

PREVIEW_CHARS = 4000
ARGS_CHARS = 160
CONTROL_TOOLS = frozenset(control_tools())


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
    audit_url: str = "",
) -> dict:
    return {
        "call_id": call_id,
        "audit_url": audit_url,
        "name": name,
        "args": short_arguments(arguments),
        "status": status,
        "result": result_text(content) if content is not None else "",
        "duration_ms": duration_ms,
        "chart": chart_for_tool(name, content) if content is not None and status == "ok" else "",
    }


def call_audit_url(session_id: int, call_id: str, audit_row: int | None = None) -> str:
    """Where a chip or a tile's tool line links to: the audit row itself when it is known (a
    reload), else the lookup by session and call id (live), which redirects to the newest row."""
    if audit_row is not None:
        return reverse("audit-call", args=[audit_row])
    return reverse("audit-call-lookup", args=[session_id, call_id])


def tool_line(
    call_id: str,
    name: str,
    arguments: Any,
    status: str = "running",
    duration_ms: int | None = None,
    audit_url: str = "",
) -> dict:
    """One tool call in a worker's tile: name, short arguments, status and duration."""
    return {
        "call_id": call_id,
        "name": name,
        "args": short_arguments(arguments),
        "status": status,
        "duration_ms": duration_ms,
        "audit_url": audit_url,
    }


def _oob(template: str, **context) -> str:
    return render_to_string(f"chat/{template}", context)


QUEUED_NOTICE = _("Queued: every worker is busy; this turn starts as soon as one is free.")


def turn_queued() -> str:
    """The turn waits in the broker queue for a worker slot (docs/runtime.md); `turn.started` removes it."""
    return (
        '<div hx-swap-oob="beforeend:#transcript"><p class="stamp queued" id="turn-queued" role="status">'
        f"{escape(QUEUED_NOTICE)}</p></div>"
    )


def turn_started(turn: int, user_text: str, chat_session_id: int, title: str = "") -> str:
    """The new turn in the transcript, with the Stop button; the chat's title (set by its first
    message) goes to the sidebar and the breadcrumb at once, not on the next reload."""
    crumb = _oob("_crumb_title.html", title=title, oob=True) if title else ""
    return (
        '<p id="turn-queued" hx-swap-oob="delete"></p>'
        + _oob(
            "_turn_started.html",
            turn=turn,
            user_text=user_text,
            chat_session_id=chat_session_id,
            title=title,
            at=timezone.now(),
        )
        + crumb
    )


RETRYING_AFTER_STATUS = _(
    "Retrying: the model answered %(status)s (attempt %(attempt)s of %(attempts)s, in %(seconds)s s)…"
)
RETRYING_UNREACHED = _(
    "Retrying: the model could not be reached (attempt %(attempt)s of %(attempts)s, in %(seconds)s s)…"
)


def retrying_text(event: events.LLMRetrying) -> str:
    """ "Retrying: the model answered 429 (attempt 2 of 4, in 2 s)…" in the viewer's language."""
    values = {
        "status": event.status,
        "attempt": event.attempt,
        "attempts": event.attempts,
        "seconds": max(1, math.ceil(event.delay)),
    }
    return str(RETRYING_AFTER_STATUS if event.status else RETRYING_UNREACHED) % values


def retrying_cleared(turn: int) -> str:
    """Removes the turn's retry line: the model answered (text, a tool call) or the turn ended."""
    return f'<p id="retrying-{turn}" hx-swap-oob="delete"></p>'


def llm_retrying(turn: int, event: events.LLMRetrying) -> str:
    """A neutral line in the turn's activity while the model is asked again; a newer retry replaces
    the older line, so the turn shows at most one."""
    return (
        retrying_cleared(turn)
        + f'<div hx-swap-oob="beforeend:#activity-{turn}"><p class="stamp retrying" id="retrying-{turn}" '
        f'role="status">{escape(retrying_text(event))}</p></div>'
    )


def stream_so_far(turn: int, text: str, links: EstateLinks | None = None) -> str:
    """The streaming bubble redrawn from all the text of its segment so far, through the same
    sanitising renderer as the final answer: a heading or a table shows as one while it streams,
    never as `##` or `|`, and the model's HTML is stripped just as it is from the answer."""
    return f'<div id="stream-{turn}" hx-swap-oob="innerHTML">{render_answer(text, links)}</div>'


def lead_in(turn: int, text: str, links: EstateLinks | None = None) -> str:
    """What the coordinator streamed before a tool call or a dispatch ("I'll ask the specialist.")
    becomes its own bubble in the turn's activity, above the chip or tile it led to, and the
    streaming bubble starts afresh for what comes next, so the two are never glued together."""
    return (
        f'<div hx-swap-oob="beforeend:#activity-{turn}"><div class="bubble assistant lead">'
        f"{render_answer(text, links)}</div></div>"
        f'<div id="stream-{turn}" hx-swap-oob="innerHTML"></div>'
    )


def chat_created(chat_session_id: int, title: str = "") -> str:
    """The new-chat page's first message made its session: the page learns its id and address
    (chat.js updates the URL and the socket's frames), and the sidebar lists it on top."""
    url = reverse("chat-page", args=[chat_session_id])
    row = {"pk": chat_session_id, "title": title, "updated_at": timezone.now()}
    item = render_to_string("chat/_sidebar_item.html", {"s": row})
    return (
        f'<div id="chat-created" hx-swap-oob="true" hidden data-session="{chat_session_id}" '
        f'data-url="{escape(url)}"></div>'
        f'<ul hx-swap-oob="afterbegin:#chat-list">{item}</ul>'
    )


def tool_started(turn: int, event: events.ToolStarted, audit: bool = False) -> str:
    if event.tool in CONTROL_TOOLS:
        return ""
    chip = chip_context(event.call_id, event.tool, event.arguments_raw)
    return _oob("_chip_new.html", turn=turn, chip=chip)


def _finished_chip(event: events.ToolEnded, audit: bool = False) -> dict:
    return chip_context(
        event.call_id,
        event.tool,
        "",
        event.status or "ok",
        event.content,
        event.duration_ms,
        call_audit_url(event.session, event.call_id) if audit and event.session else "",
    )


def tool_ended(turn: int, event: events.ToolEnded, audit: bool = False) -> str:
    if event.tool in CONTROL_TOOLS:
        return control_outcome(turn, event, audit)
    return _oob("_chip.html", chip=_finished_chip(event, audit), oob=True)


def control_outcome(turn: int, event: events.ToolEnded, audit: bool = False) -> str:
    """A control tool gets no chip, except when it did not do its job: a deduped or refused
    dispatch is shown plainly rather than silently."""
    if event.status in ("ok", "killed"):
        return ""
    return _oob("_chip_new.html", turn=turn, chip=_finished_chip(event, audit))


def worker_tool_started(tile: dict, event: events.ToolStarted, chat_session_id: int) -> str:
    """A worker began a tool call: a running line is appended to its tile's tool list."""
    line = tool_line(event.call_id, event.tool, event.arguments_raw)
    line["index"] = len(tile["tools"])
    tile["tools"].append(line)
    tile["activity"] = f"{line['name']}…"
    return (
        f'<div hx-swap-oob="beforeend:#tile-tools-{tile["id"]}">'
        + render_to_string("chat/_tile_tool.html", {"tool": line, "tile": tile})
        + "</div>"
        + worker_activity(tile["id"], tile["activity"])
    )


def worker_tool_ended(tile: dict, event: events.ToolEnded, audit: bool = False) -> str:
    """The matching running line (the newest one with that call id) gets its status and duration."""
    line = next(
        (t for t in reversed(tile["tools"]) if t["call_id"] == event.call_id and t["status"] == "running"),
        None,
    )
    if line is None:
        return ""
    line["status"] = event.status or "ok"
    line["duration_ms"] = event.duration_ms
    if audit:
        line["audit_url"] = call_audit_url(tile["id"], event.call_id)
    return render_to_string("chat/_tile_tool.html", {"tool": line, "tile": tile, "oob": True})


def note(turn: int, text: str) -> str:
    return _oob("_note_new.html", turn=turn, text=text)


def stopped_label(status: str, error: str, viewer: str = "") -> str:
    """The neutral line of a stopped agent ("Stopped by you"), or "" when it was not stopped."""
    if status != "killed":
        return ""
    return for_viewer(error if (error or "").lower().startswith("stopped") else "stopped", viewer)


def tile_context(
    worker: events.WorkerStarted,
    links: EstateLinks | None = None,
    audit: bool = False,
    viewer: str = "",
    started: str = "",
) -> dict:
    """A new worker's tile, as the socket keeps it up to date (status, result, tools). `answered`:
    the coordinator has replied, so the worker's full result is folded away (the reply is the
    answer; the result stays one click away)."""
    return {
        "id": worker.session,
        "persona": worker.persona,
        "description": worker.description,
        "status": worker.status or "pending",
        "result": "",
        "error": "",
        "stopped": stopped_label(worker.status, "", viewer),
        "activity": "",
        "started": started,
        "tools": [],
        "answered": False,
        "audit_url": reverse("audit-session", args=[worker.session]) + f"#session-{worker.session}"
        if audit
        else "",
    }


def worker_started(
    turn: int, event: events.WorkerStarted, chat_session_id: int, tile: dict | None = None
) -> str:
    """A new tile in the turn (`tile` when the caller already built it with its links)."""
    return _oob(
        "_tile_new.html", turn=turn, tile=tile or tile_context(event), chat_session_id=chat_session_id
    )


def worker_changed(tile: dict, chat_session_id: int) -> str:
    return _oob("_tile.html", tile=tile, chat_session_id=chat_session_id, oob=True)


def worker_activity(worker_id: int, text: str) -> str:
    return (
        f'<span class="tile-activity" id="tile-activity-{worker_id}" hx-swap-oob="true">{escape(text)}</span>'
    )


def turn_ended(
    turn: int,
    event: events.TurnEnded,
    chat_session_id: int,
    links: EstateLinks | None = None,
    tiles: tuple = (),
    viewer: str = "",
) -> str:
    """The answer (or the error with Retry, or a neutral "Stopped by you") replaces the stream; the
    turn's tiles fold their results."""
    answer = render_answer(event.text, links) if event.text else ""
    stopped = for_viewer(event.stopped, viewer)
    folded = ""
    for tile in tiles:
        tile["answered"] = True
        folded += worker_changed(tile, chat_session_id)
    return folded + _oob(
        "_turn_ended.html",
        turn=turn,
        answer=answer,
        stopped=stopped,
        error="" if stopped else event.error,
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


def proposal_event(
    turn: int, event: events.ProposalPending | events.ProposalDecided | events.ProposalExecuted
) -> str:
    """A pending proposal appends its card to the turn; a decided or executed one redraws it in place."""
    if isinstance(event, events.ProposalPending):
        return f'<div hx-swap-oob="beforeend:#activity-{turn}">{proposal_card(event.proposal)}</div>'
    return proposal_card(event.proposal, oob=True)
