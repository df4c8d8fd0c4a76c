"""Feishu: `im.message.receive_v1` events into conversations, card button presses
(`card.action.trigger`) into signatures and stops, and a Feishu thread (chat + root message) as a
`Thread` whose messages are interactive cards written in card markdown."""

from __future__ import annotations

import json
import logging
import re

from django.utils import translation
from django.utils.translation import gettext as _

from im_app import conversation
from im_app.formatting import split_rendered
from im_app.identities import Sender
from im_app.models import IMApp
from im_app.platforms.feishu import MAX_TEXT, FeishuClient, card, escape, to_card_markdown

log = logging.getLogger(__name__)

MENTION_KEY = re.compile(r"@_user_\d+")


class FeishuThread:
    """Replies go into the thread of `root` (the user's first message); with no root (a direct
    chat's main flow) they are plain messages in the chat."""

    def __init__(self, client: FeishuClient, chat_id: str, root: str = "", in_thread: bool = True) -> None:
        self.client, self.chat_id, self.root, self.in_thread = client, chat_id, root, in_thread

    async def post(self, rendered: str, buttons: list | None = None) -> str:
        return await self.client.send_card(
            self.chat_id, card(rendered, buttons), reply_to=self.root, in_thread=self.in_thread
        )

    async def edit(self, ref: str, rendered: str, buttons: list | None = None) -> None:
        await self.client.update_card(ref, card(rendered, buttons))

    def plain(self, text: str) -> str:
        return escape(text)

    def progress(self, lines: list[str], streamed: str) -> str:
        head = "\n".join(escape(line) for line in lines)
        return "\n\n".join(
            part for part in (f"*{conversation.PLACEHOLDER}*", head, escape(streamed[-4000:])) if part
        )

    def final(self, markdown: str, links: list[tuple[str, str]]) -> list[str]:
        footer = " · ".join(f"[{label}]({url})" for label, url in links)
        chunks = split_rendered(markdown, to_card_markdown, MAX_TEXT)
        return conversation.with_footer(chunks, footer, MAX_TEXT)

    def card(self, proposal: dict) -> tuple[str, list | None]:
        title = _("Approval needed") if proposal.get("awaiting_human") else _("Change decided")
        title = f"**{escape(title)}**"
        body = "\n".join(escape(line) for line in conversation.card_summary(proposal))
        return f"{title}\n{body}", conversation.approval_buttons(proposal)


def _text_of(message: dict) -> str:
    if message.get("message_type") != "text":
        return ""
    try:
        content = json.loads(message.get("content") or "{}")
    except ValueError:
        return ""
    return MENTION_KEY.sub("", content.get("text") or "").strip()


def _addressed(message: dict) -> bool:
    """Direct chats always; in groups only when the bot is mentioned (Feishu delivers group
    messages without a mention only to apps holding the "all group messages" scope)."""
    return message.get("chat_type") == "p2p" or bool(message.get("mentions"))


async def handle_event(app: IMApp, event: dict, client: FeishuClient | None = None) -> None:
    """One `im.message.receive_v1` event (already verified and de-duplicated)."""
    message = event.get("message") or {}
    sender = event.get("sender") or {}
    if sender.get("sender_type") not in (None, "user") or not _addressed(message):
        return
    text = _text_of(message)
    if not text:
        return
    client = client or FeishuClient(app)
    open_id = (sender.get("sender_id") or {}).get("open_id", "")
    chat_id = message.get("chat_id", "")
    if message.get("chat_type") == "p2p" and not message.get("root_id"):
        # A direct chat's main flow is one conversation; a thread inside it is its own.
        thread, thread_id = FeishuThread(client, chat_id, root=""), f"{chat_id}:"
    else:
        root = message.get("root_id") or message.get("message_id", "")
        thread, thread_id = FeishuThread(client, chat_id, root=root), f"{chat_id}:{root}"
    who = Sender(external_id=open_id, display_name=open_id, chat_id=chat_id)
    await conversation.converse(app, thread, who, thread_id, text)


def button_of(event: dict) -> tuple[str, str, str, str]:
    """(verb, id, presser's open_id, card message id) of a `card.action.trigger` event."""
    value = ((event.get("action") or {}).get("value")) or {}
    data = value.get("im", "") if isinstance(value, dict) else ""
    verb, _, target = data.removeprefix("im:").partition(":")
    presser = (event.get("operator") or {}).get("open_id", "")
    message_id = (event.get("context") or {}).get("open_message_id", "")
    return verb, target, presser, message_id


async def press(app: IMApp, event: dict) -> tuple[str, dict | None]:
    """A card button: (the toast to show the presser, the card's new state to PATCH or None), in
    the thread's language."""
    verb, target, presser, _message = button_of(event)
    with translation.override(await conversation.apresser_language(app, presser)):
        return await _press(app, verb, target, presser)


async def _press(app: IMApp, verb: str, target: str, presser: str) -> tuple[str, dict | None]:
    if not target.isdigit():
        return _("Unknown button."), None
    if verb == "stop":
        _, answer = await conversation.astop_pressed(app, presser, int(target))
        return answer, None
    if verb not in ("approve", "reject"):
        return _("Unknown button."), None
    _, answer, proposal = await conversation.adecide(app, presser, int(target), verb == "approve")
    return answer, proposal


async def update_decided_card(app: IMApp, message_id: str, proposal: dict, presser: str = "") -> None:
    """Redraw a decided card (after the toast answer), in the language the press was answered in."""
    thread = FeishuThread(FeishuClient(app), "")
    with translation.override(await conversation.apresser_language(app, presser)):
        rendered, buttons = thread.card(proposal)
    await thread.edit(message_id, rendered, buttons)
