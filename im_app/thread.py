"""A conversation thread, whatever the platform: what the relay (`conversation.relay`) needs of
it, the rendering every platform shares, the placeholder's throttled edits and the buttons.

A platform's `thread.py` subclasses `PlatformThread` with only what differs: how a message is
posted and edited on its API (and how buttons ride along), its emitter, its length limit.
Everything written into a thread goes through the platform's emitter (`im_app.markup`), so the
escaping is the same wherever the text comes from.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from typing import Protocol

from django.utils import formats
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agents_app.api import events
from chat_app.models import SessionStatus
from im_app.delivery import with_retries
from im_app.formatting import split_rendered
from im_app.markup import Emitter, render

log = logging.getLogger(__name__)

EDIT_INTERVAL = 0.8  # seconds between two edits of one message, at least
PLACEHOLDER = gettext_lazy("Looking into it…")  # str() it where it is shown, in the thread's language

Buttons = list[tuple[str, str]]  # (label, data): data is `im:<verb>:<id>`, read back by `button_parts`


class Thread(Protocol):
    """One conversation thread on one platform, as the relay needs it."""

    async def post(self, rendered: str, buttons: Buttons | None = None) -> object: ...
    async def edit(self, ref: object, rendered: str, buttons: Buttons | None = None) -> None: ...
    def plain(self, text: str) -> str: ...
    def progress(self, lines: list[str], streamed: str) -> str: ...
    def final(self, markdown: str, links: list[tuple[str, str]]) -> list[str]: ...
    def card(self, title: str, lines: list[str]) -> str: ...


class PlatformThread:
    """The rendering half of a `Thread`, the same on every platform; subclasses add `post` and
    `edit` and set the three class attributes."""

    markup: Emitter
    max_text: int  # characters of one message
    streamed_tail: int  # characters of the streamed answer the placeholder shows (its end)

    def address(self) -> dict:
        """Where the thread is on its platform, as ids only (no credential): kept in the outbox."""
        raise NotImplementedError

    @classmethod
    def at(cls, app, address: dict) -> PlatformThread:
        """The thread at an `address()`, posting with `app`'s current credentials."""
        raise NotImplementedError

    def plain(self, text: str) -> str:
        return self.markup.text(text)

    def progress(self, lines: list[str], streamed: str) -> str:
        """The placeholder while the turn runs: the emphasised placeholder, the progress lines,
        the end of the streamed answer (as text: half-written Markdown is not rendered)."""
        parts = (
            self.markup.emphasis(str(PLACEHOLDER)),
            "\n".join(self.markup.text(line) for line in lines),
            self.markup.text(streamed[-self.streamed_tail :]),
        )
        return "\n\n".join(part for part in parts if part)

    def final(self, markdown: str, links: list[tuple[str, str]]) -> list[str]:
        """The answer as messages of this platform, the links footer on the last one."""
        footer = " · ".join(self.markup.link(label, url) for label, url in links)
        chunks = split_rendered(markdown, lambda part: render(part, self.markup), self.max_text)
        return with_footer(chunks, footer, self.max_text)

    def card(self, title: str, lines: list[str]) -> str:
        """An approval card's text: a bold title, then its lines."""
        body = "\n".join(self.markup.text(line) for line in lines)
        return f"{self.markup.bold(title)}\n{body}"

    def moment(self, at: dt.datetime) -> str:
        """A point in time as every reader of a channel can place it: written out in the active
        language, in UTC and saying so (a channel has readers in many time zones). A platform
        that can show each reader their own local time overrides this (Slack)."""
        return self.markup.text(utc_words(at))

    async def post_card(self, rendered: str, buttons: Buttons | None = None) -> dict:
        """Post a message that will be edited later by someone who only kept what this returns:
        {"address": where the thread is, "message": the message's ref}, JSON-safe ids only."""
        ref = await self.post(rendered, buttons)
        return {"address": self.address(), "message": ref}


def utc_words(at: dt.datetime) -> str:
    """`at` in the active language's date-and-time format, in UTC, with "UTC" after it."""
    utc = at.astimezone(dt.UTC).replace(tzinfo=None)
    return f"{formats.date_format(utc, 'DATETIME_FORMAT')} UTC"


def with_footer(chunks: list[str], footer: str, limit: int) -> list[str]:
    """The links footer on the last chunk when it fits the platform's limit, else as its own chunk."""
    if len(chunks[-1]) + len(footer) + 2 <= limit:
        return [*chunks[:-1], f"{chunks[-1]}\n\n{footer}"]
    return [*chunks, footer]


# --- the placeholder while the turn runs ---------------------------------------------------------


class ThrottledEditor:
    """Edits one message with the newest rendering, at most once per `interval` seconds.

    Changes between two edits are coalesced: only the latest state is sent. An edit that is
    rate-limited is retried by the HTTP layer after Retry-After, and the next one waits its turn.
    The message is the placeholder the relay posts beside the running turn (`placeholder`, a task
    that ends with its ref, or None when the platform could not be reached): until it exists there
    is nothing to edit, and the final answer is then posted instead.
    """

    def __init__(
        self,
        thread: Thread,
        placeholder: asyncio.Future,
        interval: float = EDIT_INTERVAL,
        buttons: Buttons | None = None,
    ) -> None:
        self.thread, self.placeholder, self.interval = thread, placeholder, interval
        self.buttons = buttons  # kept on every progress edit (the Stop button), dropped at the end
        self.last = time.monotonic()
        self.pending: str | None = None
        self.shown = ""
        self.flusher: asyncio.Task | None = None
        self.lock = asyncio.Lock()

    def update(self, rendered: str) -> None:
        self.pending = rendered
        if self.flusher is None or self.flusher.done():
            self.flusher = asyncio.get_running_loop().create_task(self._flush_later())

    def _ref(self) -> object | None:
        if not self.placeholder.done() or self.placeholder.cancelled():
            return None
        return self.placeholder.result()

    async def _flush_later(self) -> None:
        await asyncio.sleep(max(0.0, self.last + self.interval - time.monotonic()))
        await self._edit_pending()

    async def _edit_pending(self) -> None:
        async with self.lock:
            ref = self._ref()
            if ref is None:
                return  # no placeholder (yet): the newest progress waits in `pending`
            rendered, self.pending = self.pending, None
            if rendered is None or rendered == self.shown:
                return
            await asyncio.sleep(max(0.0, self.last + self.interval - time.monotonic()))
            try:
                if self.buttons:
                    await self.thread.edit(ref, rendered, self.buttons)
                else:
                    await self.thread.edit(ref, rendered)
                self.shown = rendered
            except Exception:  # noqa: BLE001 - progress is best effort; the final edit reports
                log.warning("could not update the IM placeholder")
            finally:
                self.last = time.monotonic()

    async def finish(self, chunks: list[str]) -> tuple[list[str], str]:
        """Replace the placeholder with the first chunk of the final answer and post the rest after
        it (all of it as new messages when there is no placeholder), each with a few quick tries.

        Returns the chunks still to post, from the first that failed, and why ([], "" when all
        are in the thread): the relay queues those in the outbox."""
        if self.flusher is not None:
            self.flusher.cancel()
        ref = await self.placeholder
        async with self.lock:
            first = 0
            if ref is not None:
                await asyncio.sleep(max(0.0, self.last + self.interval - time.monotonic()))
                _done, reason = await with_retries(lambda: self.thread.edit(ref, chunks[0]), "final edit")
                self.last = time.monotonic()
                if reason:
                    return chunks, reason
                first = 1
            for index in range(first, len(chunks)):
                _ref, reason = await with_retries(
                    lambda chunk=chunks[index]: self.thread.post(chunk), "answer post"
                )
                if reason:
                    return chunks[index:], reason
        return [], ""


class Progress:
    """What the placeholder shows while the turn runs: short progress lines and streamed text."""

    MAX_LINES = 12

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.notes: list[str] = []  # SendMessage notes: kept for the final message too
        self.streamed = ""
        self.workers: dict[int, str] = {}

    def take(self, event: events.RuntimeEvent) -> bool:
        match event:
            case events.TextDelta(worker=False):
                self.streamed += event.text
            case events.Note():
                self.notes.append(event.text)
                self._line(f"💬 {event.text}")
            case events.WorkerStarted():
                self.workers[event.session] = event.persona or _("worker")
                self._line(f"▶ {event.persona}: {event.description}")
            case events.WorkerEnded():
                persona = self.workers.get(event.session) or _("worker")
                status = event.status
                self._line(f"{'✓' if status == 'completed' else '✗'} {persona} {status_word(status)}")
            case events.ToolStarted(worker=False):
                self._line(f"· {event.tool}…")
            case _:
                return False
        return True

    def _line(self, line: str) -> None:
        self.lines = (self.lines + [line[:300]])[-self.MAX_LINES :]


def status_word(status: str) -> str:
    """A worker's end status as the thread reads it (the chat's own labels, lower-cased, as a
    word inside a line); an unknown one as the runtime wrote it."""
    if status in SessionStatus.values:
        return str(SessionStatus(status).label).lower()
    return status


# --- buttons ---------------------------------------------------------------------------------------


def stop_button(session_id: int) -> Buttons:
    """The button the placeholder carries while the turn runs (`im:stop:<root session id>`)."""
    return [(_("Stop"), f"im:stop:{session_id}")]


def approval_buttons(proposal: dict) -> Buttons | None:
    """Approve / Reject while the proposal waits for a human; no buttons once it is decided."""
    if not proposal.get("awaiting_human"):
        return None
    return [(_("Approve"), f"im:approve:{proposal['id']}"), (_("Reject"), f"im:reject:{proposal['id']}")]


def button_parts(data: str) -> tuple[str, str]:
    """(verb, id) of a button's data `im:<verb>:<id>`; the id is unchecked text."""
    verb, _sep, target = data.removeprefix("im:").partition(":")
    return verb, target
