"""The reply language of a chat-app thread: the app's `reply_language`, when set (docs/i18n.md)."""

from __future__ import annotations

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
