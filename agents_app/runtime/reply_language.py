"""Which language the agents answer in (docs/i18n.md, "Agents").

For a chat thread of a IM app (Slack, Telegram, Feishu) the app's reply language, when it has
one; else the user's own language setting (`Membership.language`); else none, and the agents
answer in the language the user writes in. The IM layer sits above this one, so it tells us
its threads' language through `register_thread_language` instead of being imported here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from chat_app.models import ChatSession
from ops_app.core.turn_memo import remembered
from ops_app.models import Membership

NAMES = {
    "en": "English",
    "es": "Spanish (español)",
    "fr": "French (français)",
    "zh-hans": "Simplified Chinese (简体中文)",
}
ThreadLanguage = Callable[[ChatSession], Awaitable[str]]
_thread_languages: list[ThreadLanguage] = []


def register_thread_language(resolver: ThreadLanguage) -> None:
    """A surface's way to name the reply language of its threads ('' when it has no opinion)."""
    if resolver not in _thread_languages:
        _thread_languages.append(resolver)


def normalize(code: str | None) -> str:
    """'es', 'fr', 'zh-hans'… from what people type ('ES', 'zh_Hans', 'zh-CN', 'fr-FR'); '' if unknown."""
    code = (code or "").strip().lower().replace("_", "-")
    if code in NAMES:
        return code
    if code in {"zh", "zh-cn", "zh-sg", "zh-hans-cn"}:
        return "zh-hans"
    base = code.split("-")[0]
    return base if base in NAMES and base != "zh" else ""


async def areply_language(session: ChatSession) -> str:
    """The language code the agents of `session`'s chat answer in, or '' to follow the user
    (worked out once per turn: every worker's brief asks again)."""
    root_id = session.root_session_id or session.pk
    return await remembered(("reply_language", root_id), lambda: _reply_language(session))


async def _reply_language(session: ChatSession) -> str:
    root = session
    if session.root_session_id and session.root_session_id != session.pk:
        root = await ChatSession.objects.aget(pk=session.root_session_id)
    for resolver in _thread_languages:
        language = normalize(await resolver(root))
        if language:
            return language
    if root.user_id is None:
        return ""
    chosen = await Membership.objects.filter(user_id=root.user_id).values_list("language", flat=True).afirst()
    return normalize(chosen)


def reminder_line(language: str) -> str:
    """The coordinator's per-turn line about the reply language."""
    if not language:
        return "Reply in the language of the user's last message."
    return f"Reply to the user in {NAMES[language]} (language code {language}), whatever the tools return."


def brief_line(language: str) -> str:
    """Appended to a worker's brief: the final answer's language; tool arguments stay as they are."""
    if not language:
        return ""
    return (
        f"Write your final answer in {NAMES[language]} (language code {language}); keep tool "
        "arguments, commands, names and identifiers exactly as they are."
    )
