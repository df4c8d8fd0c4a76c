"""The language of an IM app's thread (docs/i18n.md, "IM threads"): for the agents, the app's
`reply_language` when set; for the words Ongrid itself writes there, `thread_language`."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.conf import settings

from agents_app.api import normalize_language
from chat_app.models import ChatSession
from im_app.models import IMApp


async def athread_language(session: ChatSession) -> str:
    """'' for a web chat, or an app without a reply language; else the language the thread's
    session was started with (copied from the app then), or the app's current one."""
    if getattr(session, "reply_language", ""):
        return session.reply_language
    if not session.thread_key or ":" not in session.thread_key:
        return ""
    app_id = session.thread_key.split(":", 1)[0]
    if not app_id.isdigit():
        return ""
    language = (
        await IMApp.objects.filter(pk=int(app_id), organization_id=session.organization_id)
        .values_list("reply_language", flat=True)
        .afirst()
    )
    return language or ""


def thread_language(app: IMApp, user=None) -> str:
    """The language of the fixed words Ongrid writes in one of this app's threads (placeholder,
    progress, links, buttons, cards, refusals): the app's reply language when set, else the linked
    sender's own setting (`Membership.language`), else English. Channel posts without a sender
    (summaries, schedule copies) pass no user. The one place this choice is made (docs/i18n.md)."""
    chosen = normalize_language(app.reply_language)
    if not chosen and user is not None:
        membership = getattr(user, "membership", None)  # staff without an organization have none
        chosen = normalize_language(getattr(membership, "language", "") or "")
    return chosen or settings.LANGUAGE_CODE


athread_language_for = sync_to_async(thread_language)
