"""One IM message, whatever the platform: who sent it, which coordinator session it continues,
and the relay that turns the session's events into a placeholder message edited as the turn runs.

A platform's package (`im_app/platforms/<name>/`) adapts its wire format to a `Thread`
(`im_app.thread`: post / edit / render) and calls `converse`; everything else — tenancy,
linking, `/new`, the throttled placeholder, the final answer, the approval cards — happens here
once for every platform.

The fixed words Ongrid writes in a thread (placeholder, progress, links, buttons, cards, refusals)
are in the thread's language (`im_app.languages.thread_language`), active for the whole handling
of one message or one button press (`translation.override`; the active language is per task, so
two threads answered at once never see each other's). What the agents wrote stays as written.
"""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.core.exceptions import PermissionDenied
from django.db import models
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _

from agents_app.api import ProposalClosed, astart_turn, describe_proposal, events, get_runtime, may_sign, sign
from agents_app.models import MutatingProposal
from chat_app import services
from chat_app.groups import session_group
from chat_app.models import ChatSession
from chat_app.stops import for_viewer
from im_app import identities, redelivery
from im_app.delivery import with_retries
from im_app.identities import Sender
from im_app.languages import thread_language
from im_app.models import IMApp, OutboxMessage
from im_app.outbox import aenqueue
from im_app.thread import (
    PLACEHOLDER,
    PlatformThread,
    Progress,
    Thread,
    ThrottledEditor,
    approval_buttons,
    stop_button,
)
from ops_app.core.text import cut_at_word
from ops_app.tenancy import roles
from ops_app.tenancy.scoping import organization_of

log = logging.getLogger(__name__)

TURN_LIMIT = 3600.0  # a relay gives up waiting for a turn's end after this long
IM_DIFF_LINES = 6  # of a dry run's "what would change" on an approval card
IM_DIFF_LINE_CHARS = 200


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
    await relay(app, thread, session, text)
    return session


# --- the relay ---------------------------------------------------------------------------------


async def relay(app: IMApp, thread: PlatformThread, session: ChatSession, text: str) -> None:
    """Start a turn in `session` and mirror it into the thread until it ends.

    The turn starts first: the question is saved (and the session in the user's web chats) even
    when the platform cannot be reached. The placeholder is posted beside it, with a few quick
    tries; an answer or card that still cannot be posted goes to the outbox (`im_app.outbox`)."""
    layer = get_channel_layer()
    channel = await layer.new_channel()
    group = session_group(session.root_session_id or session.pk)
    await layer.group_add(group, channel)
    try:
        try:
            await astart_turn(session, text)
        except services.TurnInProgress:
            busy = _("An answer is already being written in this thread; wait for it or press Stop.")
            await with_retries(lambda: thread.post(thread.plain(busy)), "busy notice")
            return
        except ValueError as exc:  # "The message is empty.", raised in the active language
            refusal = str(exc)
            await with_retries(lambda: thread.post(thread.plain(refusal)), "refusal")
            return
        stop = stop_button(session.pk)
        placeholder = asyncio.get_running_loop().create_task(_post_placeholder(thread, stop))
        editor = ThrottledEditor(thread, placeholder, buttons=stop)
        progress = Progress()
        cards = Cards(app, thread, session.pk)
        ended = events.TurnEnded(session.pk)  # what a relay that gave up shows
        async with asyncio.timeout(TURN_LIMIT):
            while True:
                event = events.parse((await layer.receive(channel)).get("event") or {})
                if isinstance(event, events.TurnEnded) and event.session == session.pk:
                    ended = event
                    break
                if isinstance(event, events.PROPOSAL_EVENTS):
                    cards.show(event.proposal)
                elif event is not None and progress.take(event):
                    editor.update(thread.progress(progress.lines, progress.streamed))
        await cards.settled()
        left, reason = await editor.finish(_final(thread, session.pk, ended, progress.notes))
        if left:
            await aenqueue(app, session.pk, thread.address(), [(chunk, None) for chunk in left], reason)
            log.warning(
                "IM app %s: the answer of session %s is queued for later (%s)", app.pk, session.pk, reason
            )
            redelivery.ensure_drainer()
    except TimeoutError:
        log.warning("IM relay of session %s gave up waiting for the turn", session.pk)
    finally:
        await layer.group_discard(group, channel)


async def _post_placeholder(thread: Thread, stop: list) -> object | None:
    """The placeholder's ref, or None when the platform could not take it after a few tries."""
    try:
        ref, _reason = await with_retries(
            lambda: thread.post(thread.plain(str(PLACEHOLDER)), stop), "placeholder"
        )
    except Exception:  # noqa: BLE001 - the turn goes on; the answer is then posted (or queued)
        log.exception("the IM placeholder could not be posted")
        return None
    return ref


def _final(thread: Thread, session_id: int, ended: events.TurnEnded, notes: list[str]) -> list[str]:
    """The final answer's messages. SendMessage notes come first, each on its own line: on a fast
    turn the placeholder never showed them, and the final edit replaces what it did show."""
    text = ended.text
    if ended.stopped:
        text = f"{text}\n\n⏹ {for_viewer(ended.stopped)}".strip()  # the runtime's English, translated
    elif ended.status != "completed":
        problem = ended.error or _("The turn ended without an answer.")
        text = f"{text}\n\n⚠️ {problem}".strip()
    text = text or _("(no answer)")
    if notes:
        text = "\n\n".join([*(f"💬 {note}" for note in notes), text])
    return thread.final(text, links_for(session_id))


QUEUED = object()  # a card that went to the outbox: later changes are shown when it is delivered


class Cards:
    """The approval cards of one turn in its thread: posted when a proposal awaits a human, edited
    as it is decided. Posts and edits run one after another beside the relay's reading of events
    (a platform that is slow or down must not stall it), and a card that cannot be posted is
    queued with its proposal, to be shown as it stands when the platform is back."""

    def __init__(self, app: IMApp, thread: PlatformThread, session_id: int) -> None:
        self.app, self.thread, self.session_id = app, thread, session_id
        self.refs: dict[int, object] = {}
        self.last: asyncio.Task | None = None

    def show(self, proposal: dict) -> None:
        previous = self.last
        self.last = asyncio.get_running_loop().create_task(self._after(previous, proposal))

    async def settled(self) -> None:
        if self.last is not None:
            await asyncio.gather(self.last, return_exceptions=True)

    async def _after(self, previous: asyncio.Task | None, proposal: dict) -> None:
        if previous is not None:
            await asyncio.gather(previous, return_exceptions=True)
        try:
            await self._show(proposal)
        except Exception:  # noqa: BLE001 - one card must not end the relay
            log.exception(
                "IM app %s: could not show the card of proposal %s", self.app.pk, proposal.get("id")
            )

    async def _show(self, proposal: dict) -> None:
        if not proposal.get("requires_human") and not proposal.get("awaiting_human"):
            return
        rendered, buttons = card_of(self.thread, proposal)
        ref = self.refs.get(proposal.get("id"))
        if ref is QUEUED:
            return
        if ref is None:
            if proposal.get("awaiting_human"):
                await self._post(proposal["id"], rendered, buttons)
            return
        await with_retries(lambda: self.thread.edit(ref, rendered, buttons), "card edit")

    async def _post(self, proposal_id: int, rendered: str, buttons: list | None) -> None:
        ref, reason = await with_retries(lambda: self.thread.post(rendered, buttons), "card")
        if not reason:
            self.refs[proposal_id] = ref
            return
        self.refs[proposal_id] = QUEUED
        await aenqueue(
            self.app,
            self.session_id,
            self.thread.address(),
            [(rendered, buttons)],
            reason,
            kind=OutboxMessage.Kind.CARD,
            proposal_id=proposal_id,
        )
        log.warning(
            "IM app %s: the card of proposal %s is queued for later (%s)", self.app.pk, proposal_id, reason
        )
        redelivery.ensure_drainer()


# --- the Stop button -----------------------------------------------------------------------------


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
    if not may_sign(user, proposal):
        log.warning("IM app %s: %s may not sign proposal %s", app.pk, external_user_id, proposal_id)
        return False, _("Only the chat's owner or an org admin may decide this change."), None
    try:
        proposal = sign(proposal, user, approve)
    except ProposalClosed as exc:
        return False, str(exc), describe_proposal(proposal)
    return True, _("Approved.") if approve else _("Rejected."), describe_proposal(proposal)


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
        *_dry_run_lines(proposal.get("dry_run")),
        _("Reviewer: %(decision)s — %(reason)s")
        % {"decision": reviewer, "reason": cut_at_word(proposal.get("reviewer_reason") or "", 300)},
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
    if proposal.get("outcome") == "executed":
        lines.append(_("Approved · executed."))
    elif proposal.get("outcome") == "failed":
        error = cut_at_word(proposal.get("execution_error") or "", 300)
        lines.append(_("Approved · failed: %(reason)s") % {"reason": error})
    return lines


def _dry_run_lines(dry_run: dict | None) -> list[str]:
    """The tool's dry run on an IM card: its summary and the first lines of what would change
    (a chat message is no place for a long diff; the web card has it whole)."""
    if not dry_run:
        return []
    lines = [_("Dry run: %(summary)s") % {"summary": cut_at_word(dry_run.get("summary") or "", 300)}]
    if dry_run.get("blast"):
        lines.append(cut_at_word(dry_run["blast"], 300))
    changes = [line for line in (dry_run.get("diff") or "").splitlines() if line.strip()]
    lines += [cut_at_word(line, IM_DIFF_LINE_CHARS) for line in changes[:IM_DIFF_LINES]]
    if len(changes) > IM_DIFF_LINES:
        lines.append(_("More changes not shown here: %(count)s.") % {"count": len(changes) - IM_DIFF_LINES})
    return lines


def card_of(thread: Thread, proposal: dict) -> tuple[str, list | None]:
    """An approval card in the thread's markup, and its buttons while it waits for a human."""
    title = _("Approval needed") if proposal.get("awaiting_human") else _("Change decided")
    return thread.card(title, card_summary(proposal)), approval_buttons(proposal)


def card_now(app: IMApp, thread: Thread, proposal_id: int) -> tuple[str, list | None] | None:
    """A queued card as its proposal stands now (None when the proposal is gone), for a late
    delivery: a change decided meanwhile shows its decision, and no buttons."""
    proposal = MutatingProposal.objects.filter(pk=proposal_id, organization_id=app.organization_id).first()
    return card_of(thread, describe_proposal(proposal)) if proposal is not None else None


acard_now = sync_to_async(card_now)


def _label(choices: type[models.TextChoices], value: str) -> str:
    """A stored choice as the card reads it (the model's translated label; unknown values as stored)."""
    return str(choices(value).label) if value in choices.values else value
