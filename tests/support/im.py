"""Builders for the IM bridge tests: IM apps pointed at the fake platforms, linked senders,
platform payloads, and posting a webhook the way the platform would."""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from django.test import AsyncClient
from django.utils import timezone

from im_app import background
from im_app.models import IMApp, IMIdentity

TELEGRAM_SECRET = "tg-webhook-secret_123"


def telegram_app(org, fake, **fields) -> IMApp:
    values = {
        "platform": "telegram",
        "name": "Ops bot",
        "api_base_url": fake.api_base,
        "bot_token": fake.token,
        "webhook_secret": TELEGRAM_SECRET,
    }
    values.update(fields)
    return IMApp.objects.create(organization=org, **values)


def link(app: IMApp, external_id: str | int, user) -> IMIdentity:
    return IMIdentity.objects.create(
        organization=app.organization,
        app=app,
        external_id=str(external_id),
        user=user,
        linked_at=timezone.now(),
    )


def tg_message(update_id: int, text: str, *, chat_id: int = 555, user_id: int = 42, topic: int | None = None):
    message = {
        "message_id": update_id * 10,
        "from": {"id": user_id, "is_bot": False, "first_name": "Alice", "username": f"user{user_id}"},
        "chat": {"id": chat_id, "type": "private"},
        "date": int(timezone.now().timestamp()),
        "text": text,
    }
    if text.startswith("/"):
        message["entities"] = [{"type": "bot_command", "offset": 0, "length": len(text.split()[0])}]
    if topic is not None:
        message.update(message_thread_id=topic, is_topic_message=True)
    return {"update_id": update_id, "message": message}


def tg_button(update_id: int, data: str, *, user_id: int, chat_id: int, message_id: int) -> dict:
    return {
        "update_id": update_id,
        "callback_query": {
            "id": f"cb-{update_id}",
            "from": {"id": user_id, "is_bot": False, "first_name": "Someone"},
            "message": {"message_id": message_id, "chat": {"id": chat_id, "type": "private"}},
            "data": data,
        },
    }


async def post_telegram(
    app: IMApp, update: dict, *, secret: str = TELEGRAM_SECRET, path: str | None = None, wait: bool = True
):
    """POST the update as Telegram would, then (`wait`) wait for the work it started."""
    response = await AsyncClient().post(
        f"/im/telegram/{app.pk}/{path or app.webhook_path}",
        data=json.dumps(update),
        content_type="application/json",
        headers={"X-Telegram-Bot-Api-Secret-Token": secret},
    )
    if wait:
        await background.drain()
    return response


async def until(condition, within: float = 20.0, what: str = "condition"):
    """Poll `condition()` (sync or async) until it is truthy; fail after `within` seconds."""
    import asyncio
    import inspect

    async with asyncio.timeout(within):
        while True:
            value = condition()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            await asyncio.sleep(0.05)


async def sessions_of(user) -> list:
    from chat_app.models import ChatSession

    return await sync_to_async(list)(
        ChatSession.objects.filter(user=user, parent_session__isnull=True).order_by("pk")
    )


SLACK_SIGNING_SECRET = "slack-signing-secret-0123456789"


def slack_app(org, fake, **fields) -> IMApp:
    values = {
        "platform": "slack",
        "name": "Ops bot (Slack)",
        "api_base_url": fake.api_base,
        "bot_token": fake.token,
        "signing_secret": SLACK_SIGNING_SECRET,
    }
    values.update(fields)
    return IMApp.objects.create(organization=org, **values)


def slack_signature(body: bytes, timestamp: str, secret: str = SLACK_SIGNING_SECRET) -> str:
    import hashlib
    import hmac

    return (
        "v0="
        + hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    )


def slack_mention(
    event_id: str, text: str, *, user: str = "U42", ts: str = "1700000100.000100", thread_ts=None
):
    event = {"type": "app_mention", "user": user, "text": f"<@UBOT> {text}", "channel": "C1", "ts": ts}
    if thread_ts:
        event["thread_ts"] = thread_ts
    return {"type": "event_callback", "event_id": event_id, "event": event}


async def post_slack(
    app: IMApp,
    path: str,
    body: bytes,
    *,
    content_type: str = "application/json",
    age: int = 0,
    secret: str = SLACK_SIGNING_SECRET,
    wait: bool = True,
):
    """POST a signed request as Slack would (`age` seconds old), then wait for its work."""
    import time

    timestamp = str(int(time.time()) - age)
    response = await AsyncClient().post(
        f"/im/slack/{app.pk}/{path}",
        data=body,
        content_type=content_type,
        headers={
            "X-Slack-Request-Timestamp": timestamp,
            "X-Slack-Signature": slack_signature(body, timestamp, secret),
        },
    )
    if wait:
        await background.drain()
    return response


FEISHU_VERIFICATION_TOKEN = "feishu-verification-token"
FEISHU_ENCRYPT_KEY = "feishu-encrypt-key-0123"


def feishu_app(org, fake, **fields) -> IMApp:
    values = {
        "platform": "feishu",
        "name": "Ops bot (Feishu)",
        "api_base_url": fake.api_base,
        "app_id": fake.app_id,
        "app_secret": fake.app_secret,
        "verification_token": FEISHU_VERIFICATION_TOKEN,
    }
    values.update(fields)
    return IMApp.objects.create(organization=org, **values)


def feishu_message(
    event_id: str,
    text: str,
    *,
    open_id: str = "ou_alice",
    chat_id: str = "oc_team",
    message_id: str = "om_user_1",
    root_id: str = "",
    chat_type: str = "group",
    token: str = FEISHU_VERIFICATION_TOKEN,
) -> dict:
    """An `im.message.receive_v1` event (schema 2.0); in a group the bot is @-mentioned."""
    mentions = []
    if chat_type == "group":
        text = f"@_user_1 {text}"
        mentions = [{"key": "@_user_1", "id": {"open_id": "ou_bot"}, "name": "Ongrid"}]
    message = {
        "message_id": message_id,
        "chat_id": chat_id,
        "chat_type": chat_type,
        "message_type": "text",
        "content": json.dumps({"text": text}),
        "mentions": mentions,
    }
    if root_id:
        message.update(root_id=root_id, parent_id=root_id)
    return {
        "schema": "2.0",
        "header": {
            "event_id": event_id,
            "event_type": "im.message.receive_v1",
            "token": token,
            "app_id": "cli_test_app",
            "tenant_key": "tenant",
        },
        "event": {
            "sender": {"sender_id": {"open_id": open_id}, "sender_type": "user"},
            "message": message,
        },
    }


def feishu_button(event_id: str, data: str, *, open_id: str, message_id: str) -> dict:
    """A `card.action.trigger` callback: someone pressed a card button carrying `data`."""
    return {
        "schema": "2.0",
        "header": {
            "event_id": event_id,
            "event_type": "card.action.trigger",
            "token": FEISHU_VERIFICATION_TOKEN,
        },
        "event": {
            "operator": {"open_id": open_id},
            "action": {"tag": "button", "value": {"im": data}},
            "context": {"open_message_id": message_id, "open_chat_id": "oc_team"},
        },
    }


def feishu_encrypt(payload: dict, key: str = FEISHU_ENCRYPT_KEY) -> dict:
    """What Feishu sends for an app with an encrypt key: AES-256-CBC under SHA-256(key), IV first."""
    import base64
    import hashlib
    import os

    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    iv = os.urandom(16)
    padder = padding.PKCS7(128).padder()
    padded = padder.update(json.dumps(payload).encode()) + padder.finalize()
    encryptor = Cipher(algorithms.AES(hashlib.sha256(key.encode()).digest()), modes.CBC(iv)).encryptor()
    return {"encrypt": base64.b64encode(iv + encryptor.update(padded) + encryptor.finalize()).decode()}


async def post_feishu(app: IMApp, payload: dict, *, headers: dict | None = None, wait: bool = True):
    """POST an event to the app's Feishu URL as Feishu would, then (`wait`) wait for its work."""
    response = await AsyncClient().post(
        f"/im/feishu/{app.pk}/events",
        data=json.dumps(payload),
        content_type="application/json",
        headers=headers or {},
    )
    if wait:
        await background.drain()
    return response
