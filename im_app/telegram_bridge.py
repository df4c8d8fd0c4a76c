"""Telegram: updates (from the webhook or long polling) into conversations, and a Telegram chat
(+ forum topic) as a `Thread` that speaks Telegram HTML."""

from __future__ import annotations

import html
import logging

from django.utils import translation
from django.utils.translation import gettext as _

from im_app import conversation
from im_app.formatting import split_rendered
from im_app.identities import Sender
from im_app.models import IMApp
from im_app.platforms.telegram import MAX_TEXT, TelegramClient, to_html

log = logging.getLogger(__name__)


class TelegramThread:
    def __init__(self, client: TelegramClient, chat_id, topic_id=None) -> None:
        self.client, self.chat_id, self.topic_id = client, chat_id, topic_id

    async def post(self, rendered: str, buttons: list | None = None) -> int:
        return await self.client.send_message(
            self.chat_id, rendered, thread_id=self.topic_id, markup=_markup(buttons)
        )

    async def edit(self, ref: int, rendered: str, buttons: list | None = None) -> None:
        await self.client.edit_message(self.chat_id, ref, rendered, markup=_markup(buttons))

    def plain(self, text: str) -> str:
        return html.escape(text, quote=False)

    def progress(self, lines: list[str], streamed: str) -> str:
        head = "\n".join(html.escape(line, quote=False) for line in lines)
        body = html.escape(streamed[-3000:], quote=False)
        text = "\n\n".join(part for part in (f"<i>{conversation.PLACEHOLDER}</i>", head, body) if part)
        return text[:MAX_TEXT]

    def final(self, markdown: str, links: list[tuple[str, str]]) -> list[str]:
        footer = " · ".join(f'<a href="{html.escape(url)}">{html.escape(label)}</a>' for label, url in links)
        chunks = split_rendered(markdown, to_html, MAX_TEXT)
        return conversation.with_footer(chunks, footer, MAX_TEXT)

    def card(self, proposal: dict) -> tuple[str, list | None]:
        title = _("Approval needed") if proposal.get("awaiting_human") else _("Change decided")
        title = f"<b>{html.escape(title, quote=False)}</b>"
        body = "\n".join(html.escape(line, quote=False) for line in conversation.card_summary(proposal))
        return f"{title}\n{body}", conversation.approval_buttons(proposal)


def _markup(buttons: list | None) -> dict | None:
    if buttons is None:
        return None
    return {"inline_keyboard": [[{"text": label, "callback_data": data} for label, data in buttons]]}


def _addressed(message: dict) -> bool:
    """Direct messages always; in groups, a command, a mention, or a reply to the bot."""
    if message.get("chat", {}).get("type") == "private":
        return True
    if any(entity.get("type") in ("mention", "bot_command") for entity in message.get("entities") or []):
        return True
    replied = (message.get("reply_to_message") or {}).get("from") or {}
    return bool(replied.get("is_bot"))


def _without_mentions(message: dict) -> str:
    text = message.get("text") or ""
    for entity in sorted(message.get("entities") or [], key=lambda e: -e.get("offset", 0)):
        if entity.get("type") == "mention":
            start, end = entity["offset"], entity["offset"] + entity["length"]
            text = text[:start] + text[end:]
    return text.strip()


async def handle_update(app: IMApp, update: dict, client: TelegramClient | None = None) -> None:
    """One update (already de-duplicated): a message to answer or an approval button pressed."""
    client = client or TelegramClient(app)
    if "callback_query" in update:
        await _button(app, client, update["callback_query"])
        return
    message = update.get("message") or {}
    if not message.get("text") or not _addressed(message):
        return
    chat, sender = message["chat"], message.get("from") or {}
    topic = message.get("message_thread_id") if message.get("is_topic_message") else None
    thread = TelegramThread(client, chat["id"], topic)
    who = Sender(
        external_id=str(sender.get("id", "")),
        display_name=sender.get("username") or sender.get("first_name") or "",
        chat_id=str(chat["id"]),
    )
    await conversation.converse(app, thread, who, f"{chat['id']}:{topic or ''}", _without_mentions(message))


async def _button(app: IMApp, client: TelegramClient, query: dict) -> None:
    """A button press, answered (and its card redrawn) in the thread's language."""
    presser = str((query.get("from") or {}).get("id", ""))
    with translation.override(await conversation.apresser_language(app, presser)):
        await _press(app, client, query, presser)


async def _press(app: IMApp, client: TelegramClient, query: dict, presser: str) -> None:
    verb, _sep, proposal_id = (query.get("data") or "").removeprefix("im:").partition(":")
    if verb == "stop" and proposal_id.isdigit():
        _, answer = await conversation.astop_pressed(app, presser, int(proposal_id))
        await client.answer_callback(query["id"], answer)
        return
    if verb not in ("approve", "reject") or not proposal_id.isdigit():
        await client.answer_callback(query["id"], _("Unknown button."))
        return
    done, answer, card = await conversation.adecide(app, presser, int(proposal_id), verb == "approve")
    await client.answer_callback(query["id"], answer)
    message = query.get("message") or {}
    if card is not None and message.get("message_id"):
        thread = TelegramThread(client, message["chat"]["id"])
        rendered, buttons = thread.card(card)
        await thread.edit(message["message_id"], rendered, buttons)
