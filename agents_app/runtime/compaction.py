"""The history a coordinator turn is sent: recent turns verbatim, earlier ones as a summary.

A long chat would otherwise either outgrow the model's context or, cut to its last messages, lose
what was said at its start ("which host did we restart this morning?"). Past ONGRID_HISTORY_TOKENS
(≈ 4 characters a token) the oldest turns are condensed by the chat's own model into a summary,
stored (chat_app.HistorySummary, shown in the audit pages) and sent ahead of the recent turns; the
next compaction folds the previous summary in. Without a model (offline), or when the model fails,
the summary is the turns' own questions and answers, cut short: a turn never fails for want of a
summary. docs/chat.md, "Long chats".
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from django.conf import settings

from agents_app.llm.base import LLMCompletion, LLMError, LLMProvider
from agents_app.llm.offline.provider import OfflineProvider
from chat_app import services

log = logging.getLogger(__name__)

SUMMARISER = "summariser"  # the persona name its LLM-call rows carry
CHARS_PER_TOKEN = 4
WINDOW = 50  # messages sent when summaries are off (ONGRID_HISTORY_TOKENS=0)
TOOL_RESULT_CHARS = 600  # of each tool result, in the transcript the summariser reads
EXTRACT_CHARS = 400  # of each question and answer, in a summary made without a model
SUMMARY_TAG = "conversation-summary"

INSTRUCTIONS = (
    f"You are the `{SUMMARISER}` agent of Ongrid. You condense the earlier part of an on-call chat so "
    "the assistant can go on answering in it without the full transcript. Keep every fact a later "
    "question may need: device, service, incident and ticket names and ids, numbers with their units, "
    "times, what was checked and what it showed, changes made, approved or refused, and open "
    "questions. Fold the earlier summary in. Drop greetings and repetition. Answer with the summary "
    "only, in the conversation's language, as short bullets, at most 300 words."
)


async def history_for_turn(
    session_id: int,
    provider: LLMProvider,
    model: str,
    recorder: Callable[..., Awaitable[object]] | None = None,
    organization_id: int | None = None,
) -> list[dict]:
    """The messages to send for the chat `session_id`, compacted first when they are too long."""
    budget = settings.CONFIG.history_tokens
    if not budget:
        return await services.ahistory(session_id, WINDOW)
    summary, rows = await services.ahistory_window(session_id)
    if _tokens(summary.text if summary else "", rows) > budget:
        older, rows = _split(rows, budget // 2)
        if older:
            summary = await _compact(session_id, summary, older, provider, model, recorder, organization_id)
    lead = [summary_message(summary.text)] if summary else []
    return lead + [{key: value for key, value in row.items() if key != "seq"} for row in rows]


def summary_message(text: str) -> dict:
    return {
        "role": "system",
        "content": f"<{SUMMARY_TAG}>\nEarlier in this chat (summarised):\n{text.strip()}\n</{SUMMARY_TAG}>",
    }


def _chars(rows: list[dict]) -> int:
    return sum(len(row.get("content") or "") + len(str(row.get("tool_calls") or "")) for row in rows)


def _tokens(summary: str, rows: list[dict]) -> int:
    return (len(summary) + _chars(rows)) // CHARS_PER_TOKEN


def _turns(rows: list[dict]) -> list[list[dict]]:
    """The rows grouped into turns, each starting at a user message."""
    turns: list[list[dict]] = []
    for row in rows:
        if row["role"] == "user" or not turns:
            turns.append([])
        turns[-1].append(row)
    return turns


def _split(rows: list[dict], keep_tokens: int) -> tuple[list[dict], list[dict]]:
    """(older rows to summarise, the recent turns kept verbatim: the last one always, then as many
    earlier ones as fit in `keep_tokens`)."""
    turns = _turns(rows)
    kept = [turns.pop()] if turns else []
    chars = _chars(kept[0]) if kept else 0
    while turns and (chars + (earlier := _chars(turns[-1]))) // CHARS_PER_TOKEN <= keep_tokens:
        chars += earlier
        kept.insert(0, turns.pop())
    return [row for turn in turns for row in turn], [row for turn in kept for row in turn]


async def _compact(session_id, previous, older, provider, model, recorder, organization_id):
    earlier = previous.text if previous else ""
    text, used_model = "", ""
    if provider.name != OfflineProvider.name:
        text = await _ask_model(earlier, older, provider, model, recorder, organization_id, session_id)
        used_model = model if text else ""
    if not text:
        text = extract(earlier, older)
    return await services.asave_history_summary(
        session_id,
        through_seq=older[-1]["seq"],
        text=text,
        messages=len(older) + (previous.messages if previous else 0),
        model=used_model,
    )


def transcript(earlier: str, rows: list[dict]) -> str:
    """The older turns as the summariser reads them: every question and answer, tool calls by name
    and their results cut to TOOL_RESULT_CHARS."""
    lines = [f"Earlier summary:\n{earlier.strip()}\n"] if earlier.strip() else []
    for row in rows:
        content = (row.get("content") or "").strip()
        if row["role"] == "user":
            lines.append(f"User: {content}")
        elif row["role"] == "tool":
            cut = content[:TOOL_RESULT_CHARS] + ("…" if len(content) > TOOL_RESULT_CHARS else "")
            lines.append(f"Tool result: {cut}")
        else:
            calls = [call.get("function", {}).get("name", "?") for call in row.get("tool_calls") or []]
            if calls:
                lines.append(f"Assistant (calls {', '.join(calls)}): {content}".rstrip(": "))
            elif content:
                lines.append(f"Assistant: {content}")
    return "\n".join(lines)


def extract(earlier: str, rows: list[dict]) -> str:
    """A summary without a model: each earlier question with the answer that ended its turn."""
    lines = [earlier.strip()] if earlier.strip() else []
    for turn in _turns(rows):
        question = _short(turn[0].get("content") or "")
        answers = [row for row in turn if row["role"] == "assistant" and (row.get("content") or "").strip()]
        answer = _short(answers[-1]["content"]) if answers else "(no answer)"
        lines.append(f"- User: {question}\n  Answer: {answer}")
    return "\n".join(lines)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXTRACT_CHARS else text[: EXTRACT_CHARS - 1] + "…"


async def _ask_model(earlier, rows, provider, model, recorder, organization_id, session_id) -> str:
    messages = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": transcript(earlier, rows)},
    ]
    started_at, clock = datetime.now(UTC), time.monotonic()
    completion: LLMCompletion | None = None
    error = ""
    try:
        async for event in provider.stream_chat(messages, [], model=model):
            if isinstance(event, LLMCompletion):
                completion = event
    except LLMError as exc:
        error = exc.message
    except Exception as exc:  # noqa: BLE001 - a broken provider must not cost the turn
        log.exception("the history summary of session %s failed", session_id)
        error = f"{type(exc).__name__}: {exc}"
    if recorder is not None and organization_id:
        await recorder(
            organization_id=organization_id,
            session_id=session_id,
            persona=SUMMARISER,
            provider=provider.name,
            model=completion.model if completion and completion.model else model,
            usage=completion.usage if completion else {},
            latency_ms=int((time.monotonic() - clock) * 1000),
            finish_reason=completion.finish_reason if completion else "",
            error=error,
            started_at=started_at,
        )
    if error:
        log.warning(
            "summarising the history of session %s failed (%s); using its own words", session_id, error
        )
    return (completion.text or "").strip() if completion else ""
