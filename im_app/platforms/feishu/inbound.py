"""Feishu inbound: the event subscription's payloads opened and verified (token, signature,
encryption), `im.message.receive_v1` events into conversations, and card button presses
(`card.action.trigger`) into signatures and stops."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import re

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from django.utils import translation
from django.utils.translation import gettext as _

from im_app import alert_presses, conversation
from im_app.identities import Sender
from im_app.models import IMApp
from im_app.platforms.feishu.client import FeishuClient
from im_app.platforms.feishu.thread import FeishuThread
from im_app.thread import button_parts

log = logging.getLogger(__name__)

MENTION_KEY = re.compile(r"@_user_\d+")


# --- is this request from Feishu? ------------------------------------------------------------------


def payload_of(app: IMApp, body: bytes, headers) -> dict | None:
    """The event a Feishu request carries, or None when it is not from Feishu for this app: an app
    with an encrypt key accepts only encrypted bodies (and checks `X-Lark-Signature` when sent);
    every payload must carry the app's verification token."""
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    if not isinstance(payload, dict):
        return None
    if app.encrypt_key:
        payload = _opened(app, payload, body, headers)
        if payload is None:
            return None
    token = (payload.get("header") or {}).get("token") or payload.get("token") or ""
    return payload if token_ok(app, token) else None


def _opened(app: IMApp, payload: dict, body: bytes, headers) -> dict | None:
    """An encrypted delivery's event, when its signature (if sent) and its encryption are the app's."""
    signature = headers.get("X-Lark-Signature", "")
    timestamp = headers.get("X-Lark-Request-Timestamp", "")
    nonce = headers.get("X-Lark-Request-Nonce", "")
    if signature and not signature_ok(app, timestamp, nonce, body, signature):
        return None
    if not isinstance(payload.get("encrypt"), str):
        return None
    try:
        opened = decrypt(payload["encrypt"], app.encrypt_key)
    except (ValueError, UnicodeDecodeError):
        return None
    return opened if isinstance(opened, dict) else None


def token_ok(app: IMApp, token: str) -> bool:
    """The verification token Feishu puts in every event (`header.token`, or `token` in v1 bodies),
    compared in constant time."""
    expected = app.verification_token or ""
    return bool(expected) and hmac.compare_digest(expected.encode(), (token or "").encode())


def signature_ok(app: IMApp, timestamp: str, nonce: str, body: bytes, signature: str) -> bool:
    """`X-Lark-Signature`: hex SHA-256 of timestamp + nonce + encrypt key + raw body."""
    key = app.encrypt_key or ""
    digest = hashlib.sha256(timestamp.encode() + nonce.encode() + key.encode() + body).hexdigest()
    return hmac.compare_digest(digest.encode(), signature.encode())


def decrypt(encrypted: str, encrypt_key: str) -> dict:
    """Feishu's documented scheme: AES-256-CBC, key = SHA-256 of the app's encrypt key, the first
    16 bytes of the base64-decoded payload are the IV, PKCS#7 padding, JSON inside.
    Raises ValueError when the payload was not made with this key."""
    raw = base64.b64decode(encrypted, validate=False)
    if len(raw) < 32 or len(raw) % 16:
        raise ValueError("not an encrypted Feishu payload")
    key = hashlib.sha256(encrypt_key.encode()).digest()
    decryptor = Cipher(algorithms.AES(key), modes.CBC(raw[:16])).decryptor()
    padded = decryptor.update(raw[16:]) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    plain = unpadder.update(padded) + unpadder.finalize()
    return json.loads(plain.decode())


# --- messages and button presses -------------------------------------------------------------------


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
    verb, target = button_parts(data)
    presser = (event.get("operator") or {}).get("open_id", "")
    message_id = (event.get("context") or {}).get("open_message_id", "")
    return verb, target, presser, message_id


async def press(app: IMApp, event: dict) -> tuple[str, dict | None]:
    """A card button: (the toast to show the presser, the card's new state to PATCH or None), in
    the thread's language."""
    verb, target, presser, _message = button_of(event)
    with translation.override(await conversation.apresser_language(app, presser)):
        if alert_presses.is_alert_verb(verb) and target.isdigit():
            chat_id = (event.get("context") or {}).get("open_chat_id", "")
            # Awaited here: the answer is the toast. The incidents app answers at once and runs
            # the action's review after it (chat_app.signals, alert_card_pressed).
            answer = await alert_presses.apress(app, presser, verb, int(target), chat_id=chat_id)
            return answer, None
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
        rendered, buttons = conversation.card_of(thread, proposal)
    await thread.edit(message_id, rendered, buttons)
