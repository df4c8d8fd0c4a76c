"""Telegram inbound: updates (from the webhook or long polling) into conversations and button
presses, and the webhook's secret token."""

from __future__ import annotations

import hmac
import logging

from django.utils import translation

from im_app import alert_presses, background, conversation, deliveries
from im_app.identities import Sender
from im_app.models import IMApp
from im_app.platforms.telegram.client import TelegramClient
from im_app.platforms.telegram.thread import TelegramThread
from im_app.thread import button_parts

log = logging.getLogger(__name__)


def secret_ok(app: IMApp, header: str) -> bool:
    """The `X-Telegram-Bot-Api-Secret-Token` is the secret given to setWebhook (constant time)."""
    expected = app.webhook_secret or ""
    return bool(expected) and hmac.compare_digest(expected.encode(), header.encode())


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
    verb, proposal_id = button_parts(query.get("data") or "")
    if alert_presses.is_alert_verb(verb) and proposal_id.isdigit():
        chat_id = str(((query.get("message") or {}).get("chat") or {}).get("id", ""))
        answer = await alert_presses.apress(app, presser, verb, int(proposal_id), chat_id=chat_id)
        await client.answer_callback(query["id"], answer)  # the presser's pop-up: theirs only
        return
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
        rendered, buttons = conversation.card_of(thread, card)
        await thread.edit(message["message_id"], rendered, buttons)


async def accept_update(app: IMApp, update: dict, client: TelegramClient | None = None) -> bool:
    """An update from either way of delivery (webhook, long polling): its handling starts after
    the answer. False for a redelivery of an update already seen, which starts nothing."""
    update_id = int(update["update_id"])
    if not await deliveries.afirst_time(app, f"update:{update_id}"):
        return False
    background.run_after_answer(handle_update(app, update, client), f"telegram-{app.pk}-{update_id}")
    return True
