"""One IM message, whatever the platform: who sent it, which coordinator session it continues,
and the relay that turns the session's events into a placeholder message edited as the turn runs.

A platform module adapts its wire format to a `Thread` (post / edit / render) and calls
`converse`; everything else — tenancy, linking, `/new`, throttling, the final answer, the
approval cards — happens here once for every platform.

The fixed words Ongrid writes in a thread (placeholder, progress, links, buttons, cards, refusals)
are in the thread's language (`im_app.languages.thread_language`), active for the whole handling
of one message or one button press (`translation.override`; the active language is per task, so
two threads answered at once never see each other's). What the agents wrote stays as written.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Protocol

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.core.exceptions import PermissionDenied
from django.db import models
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from agents_app import proposals
from agents_app.models import MutatingProposal
from agents_app.runtime import get_runtime
from agents_app.turns import astart_turn
from chat_app import services
from chat_app.groups import session_group
from chat_app.models import ChatSession, SessionStatus
from chat_app.stops import for_viewer
from im_app import identities
from im_app.identities import Sender
from im_app.languages import thread_language
from im_app.models import IMApp
from ops_app.tenancy import roles
from ops_app.tenancy.scoping import organization_of

log = logging.getLogger(__name__)

EDIT_INTERVAL = 0.8  # seconds between two edits of one message, at least
TURN_LIMIT = 3600.0  # a relay gives up waiting for a turn's end after this long
PLACEHOLDER = gettext_lazy("Looking into it…")  # str() it where it is shown, in the thread's language


class Thread(Protocol):
    """One conversation thread on one platform, as the relay needs it."""

    async def post(self, rendered: str, buttons: list | None = None) -> object: ...
    async def edit(self, ref: object, rendered: str, buttons: list | None = None) -> None: ...
    def plain(self, text: str) -> str: ...
    def progress(self, lines: list[str], streamed: str) -> str: ...
    def final(self, markdown: str, links: list[tuple[str, str]]) -> list[str]: ...
    def card(self, proposal: dict) -> tuple[str, list | None]: ...


# --- sessions ----------------------------------------------------------------------------------


def thread_key(app: IMApp, thread: str) -> str:
    return f"{app.pk}:{thread}"[:255]


def thread_session(app: IMApp, user, thread: str, *, fresh: bool = False) -> ChatSession:
    """The coordinator session of (user, IM thread): the newest one, or a new one when `fresh`
    (`/new`) or when there is none yet. Refuses a user of another organization than the app's."""
    organization = organization_of(user)
    if organization is None or organization.pk != app.organization_id:
        raise PermissionDenied(_("This chat app belongs to another organization."))
    key = thread_key(app, thread)
    if not fresh:
        existing = (
            ChatSession.objects.filter(
                organization_id=app.organization_id,
                user=user,
                channel=app.platform,
                thread_key=key,
                parent_session__isnull=True,
            )
            .order_by("-created_at", "-pk")
            .first()
        )
        if existing is not None:
            return existing
    return services.start_chat(user, channel=app.platform, thread_key=key, reply_language=app.reply_language)


athread_session = sync_to_async(thread_session)


def links_for(session_id: int) -> list[tuple[str, str]]:
    return [
        (_("Transcript"), identities.public_url(reverse("chat-page", args=[session_id]))),
        (_("Audit"), identities.public_url(reverse("audit-session", args=[session_id]))),
    ]


# --- one inbound message ------------------------------------------------------------------------


async def converse(
    app: IMApp, thread: Thread, sender: Sender, thread_id: str, text: str
) -> ChatSession | None:
    """Handle one message addressed to the bot. Returns the session a turn ran in, if any."""
    verdict = await sync_to_async(identities.resolve)(app, sender)
    if not verdict.allowed:
        return None
    with translation.override(await sync_to_async(thread_language)(app, verdict.user)):
        return await _converse(app, thread, verdict, thread_id, text)


async def _converse(
    app: IMApp, thread: Thread, verdict: identities.Verdict, thread_id: str, text: str
) -> ChatSession | None:
    """`converse` once the sender is known, in the thread's language."""
    if verdict.user is None:
        await thread.post(
            thread.plain(
                _(
                    "Hello! I don't know who you are in Ongrid yet. Link your account once, signed in, "
                    "at %(url)s (the link works for 30 minutes), then write again."
                )
                % {"url": verdict.link_url}
            )
        )
        return None
    words = text.strip().split(maxsplit=1)
    # "/new [question]" (Telegram's "/new@bot" too), or a message that is just "new" (Slack, where a
    # typed slash is taken for a slash command).
    fresh = bool(words) and (words[0].lower().split("@")[0] == "/new" or text.strip().lower() == "new")
    if fresh:
        text = words[1] if len(words) > 1 else ""
    session = await athread_session(app, verdict.user, thread_id, fresh=fresh)
    if fresh and not text.strip():
        await thread.post(thread.plain(_("Started a new conversation. What should I look into?")))
        return session
    await relay(thread, session, text)
    return session


# --- the relay ---------------------------------------------------------------------------------


class ThrottledEditor:
    """Edits one message with the newest rendering, at most once per `interval` seconds.

    Changes between two edits are coalesced: only the latest state is sent. An edit that is
    rate-limited is retried by the HTTP layer after Retry-After, and the next one waits its turn.
    """

    def __init__(
        self, thread: Thread, ref: object, interval: float = EDIT_INTERVAL, buttons: list | None = None
    ) -> None:
        self.thread, self.ref, self.interval = thread, ref, interval
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

    async def _flush_later(self) -> None:
        await asyncio.sleep(max(0.0, self.last + self.interval - time.monotonic()))
        await self._edit_pending()

    async def _edit_pending(self) -> None:
        async with self.lock:
            rendered, self.pending = self.pending, None
            if rendered is None or rendered == self.shown:
                return
            await asyncio.sleep(max(0.0, self.last + self.interval - time.monotonic()))
            try:
                if self.buttons:
                    await self.thread.edit(self.ref, rendered, self.buttons)
                else:
                    await self.thread.edit(self.ref, rendered)
                self.shown = rendered
            except Exception:  # noqa: BLE001 - progress is best effort; the final edit reports
                log.exception("could not update the IM placeholder")
            finally:
                self.last = time.monotonic()

    async def finish(self, chunks: list[str]) -> None:
        """Replace the message with the first chunk of the final answer; post the rest after it."""
        if self.flusher is not None:
            self.flusher.cancel()
        self.buttons = None
        self.shown = ""  # the same text without the Stop button is still an edit
        self.pending = chunks[0]
        await self._edit_pending()
        for chunk in chunks[1:]:
            await self.thread.post(chunk)


async def relay(thread: Thread, session: ChatSession, text: str) -> None:
    """Start a turn in `session` and mirror it into the thread until it ends."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = session_group(session.root_session_id or session.pk)
    await layer.group_add(group, channel)
    try:
        stop = stop_button(session.pk)
        ref = await thread.post(thread.plain(str(PLACEHOLDER)), stop)
        try:
            await astart_turn(session, text)
        except services.TurnInProgress:
            busy = _("An answer is already being written in this thread; wait for it or press Stop.")
            await thread.edit(ref, thread.plain(busy))
            return
        except ValueError as exc:  # "The message is empty.", raised in the active language
            await thread.edit(ref, thread.plain(str(exc)))
            return
        editor = ThrottledEditor(thread, ref, buttons=stop)
        progress = Progress()
        cards: dict[int, object] = {}
        ended: dict = {}
        async with asyncio.timeout(TURN_LIMIT):
            while True:
                event = (await layer.receive(channel)).get("event") or {}
                kind = event.get("event")
                if kind == "turn.ended" and event.get("session") == session.pk:
                    ended = event
                    break
                if kind in ("proposal.pending", "proposal.decided"):
                    await _show_card(thread, cards, event.get("proposal") or {})
                elif progress.take(event):
                    editor.update(thread.progress(progress.lines, progress.streamed))
        await editor.finish(_final(thread, session.pk, ended))
    except TimeoutError:
        log.warning("IM relay of session %s gave up waiting for the turn", session.pk)
    finally:
        await layer.group_discard(group, channel)


class Progress:
    """What the placeholder shows while the turn runs: short progress lines and streamed text."""

    MAX_LINES = 12

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.streamed = ""
        self.workers: dict[int, str] = {}

    def take(self, event: dict) -> bool:
        kind = event.get("event")
        if kind == "text.delta" and not event.get("worker"):
            self.streamed += event.get("text", "")
        elif kind == "note":
            self._line(f"💬 {event.get('text', '')}")
        elif kind == "worker.started":
            self.workers[event.get("session")] = event.get("persona") or _("worker")
            self._line(f"▶ {event.get('persona')}: {event.get('description', '')}")
        elif kind == "worker.ended":
            persona = self.workers.get(event.get("session")) or _("worker")
            status = event.get("status") or ""
            self._line(f"{'✓' if status == 'completed' else '✗'} {persona} {status_word(status)}")
        elif kind == "tool.started" and not event.get("worker"):
            self._line(f"· {event.get('name')}…")
        else:
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


def _final(thread: Thread, session_id: int, ended: dict) -> list[str]:
    text = ended.get("text") or ""
    if ended.get("stopped"):
        text = f"{text}\n\n⏹ {for_viewer(ended['stopped'])}".strip()  # the runtime's English, translated
    elif ended.get("status") != "completed":
        problem = ended.get("error") or _("The turn ended without an answer.")
        text = f"{text}\n\n⚠️ {problem}".strip()
    return thread.final(text or _("(no answer)"), links_for(session_id))


async def _show_card(thread: Thread, cards: dict[int, object], proposal: dict) -> None:
    if not proposal.get("requires_human") and not proposal.get("awaiting_human"):
        return
    rendered, buttons = thread.card(proposal)
    ref = cards.get(proposal.get("id"))
    if ref is None:
        if proposal.get("awaiting_human"):
            cards[proposal["id"]] = await thread.post(rendered, buttons)
        return
    await thread.edit(ref, rendered, buttons)


# --- the Stop button -----------------------------------------------------------------------------


def stop_button(session_id: int) -> list[tuple[str, str]]:
    """The button the placeholder carries while the turn runs (`im:stop:<root session id>`)."""
    return [(_("Stop"), f"im:stop:{session_id}")]


def may_stop(user, session: ChatSession) -> bool:
    """As on the web: the chat's owner, or an org admin of the session's organization."""
    if session.user_id == user.pk:
        return True
    organization = organization_of(user)
    return (
        organization is not None
        and organization.pk == session.organization_id
        and user.groups.filter(name=roles.ORG_ADMIN).exists()
    )


def stoppable(app: IMApp, external_user_id: str, session_id: int) -> tuple[object | None, str]:
    """(the Ongrid user who may stop this session, "") or (None, why not). Only sessions this very
    app started are found at all, so a button can never reach another organization's turn."""
    user = identities.linked_user(app, external_user_id)
    if user is None:
        return None, _("Link your Ongrid account first: write to the bot to get a link.")
    session = ChatSession.objects.filter(
        pk=session_id,
        organization_id=app.organization_id,
        channel=app.platform,
        thread_key__startswith=f"{app.pk}:",
        parent_session__isnull=True,
    ).first()
    if session is None:
        return None, _("This conversation is not known here.")
    if not may_stop(user, session):
        log.warning("IM app %s: %s may not stop session %s", app.pk, external_user_id, session_id)
        return None, _("Only the chat's owner or an org admin may stop this.")
    return user, ""


async def astop_pressed(app: IMApp, external_user_id: str, session_id: int) -> tuple[bool, str]:
    """A Stop button press: (stopped, what to tell the presser). The turn's own end then shows the
    stop in the thread ("Stopped by alice before the answer was complete…")."""
    user, refusal = await sync_to_async(stoppable)(app, external_user_id, session_id)
    if user is None:
        return False, refusal
    stopped = await get_runtime().stop_session(session_id, by=user.get_username())
    return True, _("Stopping…") if stopped else _("Nothing is running.")


# --- approval buttons --------------------------------------------------------------------------


def decide(
    app: IMApp, external_user_id: str, proposal_id: int, approve: bool
) -> tuple[bool, str, dict | None]:
    """A button press on an approval card: (done, what to tell the presser, the card's new state).

    Only a linked user who may sign on the web (the chat's owner, an org admin) decides, and only
    proposals of the app's own organization are found at all.
    """
    user = identities.linked_user(app, external_user_id)
    if user is None:
        return False, _("Link your Ongrid account first: write to the bot to get a link."), None
    proposal = (
        MutatingProposal.objects.select_related("root_session")
        .filter(pk=proposal_id, organization_id=app.organization_id)
        .first()
    )
    if proposal is None:
        return False, _("This change is not known here."), None
    if not proposals.may_sign(user, proposal):
        log.warning("IM app %s: %s may not sign proposal %s", app.pk, external_user_id, proposal_id)
        return False, _("Only the chat's owner or an org admin may decide this change."), None
    try:
        proposal = proposals.sign(proposal, user, approve)
    except proposals.ProposalClosed as exc:
        return False, str(exc), proposals.describe_proposal(proposal)
    return True, _("Approved.") if approve else _("Rejected."), proposals.describe_proposal(proposal)


adecide = sync_to_async(decide)


def presser_language(app: IMApp, external_user_id: str) -> str:
    """The language a button press is answered in: the thread's, with the presser as its sender."""
    return thread_language(app, identities.linked_user(app, external_user_id))


apresser_language = sync_to_async(presser_language)


def card_summary(proposal: dict) -> list[str]:
    """The lines of an approval card, shared by every platform's renderer."""
    reviewer = _label(MutatingProposal.Decision, proposal.get("reviewer_decision") or "")
    radius = _label(MutatingProposal.BlastRadius, proposal.get("blast_radius") or "") or _("unknown")
    lines = [
        _("Action: %(action)s") % {"action": proposal.get("action")},
        _("Target: %(target)s") % {"target": proposal.get("target")},
        _("Reason: %(reason)s") % {"reason": proposal.get("reason")},
        _("Blast radius: %(radius)s") % {"radius": radius},
        _("Reviewer: %(decision)s — %(reason)s")
        % {"decision": reviewer, "reason": (proposal.get("reviewer_reason") or "")[:300]},
    ]
    if proposal.get("awaiting_human"):
        lines.append(_("Awaiting approval by the chat's owner or an org admin."))
    elif proposal.get("decision") in ("approve", "reject"):
        who = proposal.get("human_approver")
        reason = proposal.get("decision_reason", "")
        if proposal["decision"] == "approve":
            line = _("Approved by %(who)s: %(reason)s") if who else _("Approved: %(reason)s")
        else:
            line = _("Rejected by %(who)s: %(reason)s") if who else _("Rejected: %(reason)s")
        lines.append(line % {"who": who, "reason": reason})
    return lines


def _label(choices: type[models.TextChoices], value: str) -> str:
    """A stored choice as the card reads it (the model's translated label; unknown values as stored)."""
    return str(choices(value).label) if value in choices.values else value


def approval_buttons(proposal: dict) -> list[tuple[str, str]] | None:
    """Approve / Reject while the proposal waits for a human; no buttons once it is decided."""
    if not proposal.get("awaiting_human"):
        return None
    return [(_("Approve"), f"im:approve:{proposal['id']}"), (_("Reject"), f"im:reject:{proposal['id']}")]


def with_footer(chunks: list[str], footer: str, limit: int) -> list[str]:
    """The links footer on the last chunk when it fits the platform's limit, else as its own chunk."""
    if len(chunks[-1]) + len(footer) + 2 <= limit:
        return [*chunks[:-1], f"{chunks[-1]}\n\n{footer}"]
    return [*chunks, footer]
