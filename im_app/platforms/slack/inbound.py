"""Slack inbound: Events API callbacks into conversations, Block Kit button presses into stops and
signatures, the `/new` slash command, and the signature every Slack request carries.

Both ways Slack delivers (signed webhooks in `views`, Socket Mode envelopes in `socket_mode`) carry
the same payloads and hand them to the `accept_*` functions here: de-duplicate, then start the work
after the platform has had its answer."""

from __future__ import annotations

import hashlib
import hmac
import logging
import re
import time

from asgiref.sync import sync_to_async
from django.utils import translation
from django.utils.translation import gettext as _

from im_app import alert_presses, background, conversation, deliveries, identities
from im_app.identities import Sender
from im_app.languages import thread_language
from im_app.markup import escape
from im_app.models import IMApp
from im_app.platforms.slack.client import SlackClient
from im_app.platforms.slack.thread import SlackThread

log = logging.getLogger(__name__)

MENTION = re.compile(r"<@[A-Z0-9]+>")
SIGNATURE_WINDOW = 300  # seconds: Slack's documented replay window


def signature_ok(app: IMApp, timestamp: str, body: bytes, signature: str, now: float | None = None) -> bool:
    """`v0=` HMAC-SHA256 of `v0:<timestamp>:<body>` with the signing secret, within five minutes;
    compared in constant time."""
    secret = app.signing_secret or ""
    if not secret or not timestamp.isdigit():
        return False
    if abs((now or time.time()) - int(timestamp)) > SIGNATURE_WINDOW:
        return False
    digest = hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(f"v0={digest}".encode(), signature.encode())


def _addressed(event: dict) -> bool:
    """Mentions in channels, direct messages always; never the bot's own or other bots' messages."""
    if event.get("bot_id") or event.get("subtype"):
        return False
    if event.get("type") == "app_mention":
        return True
    return event.get("type") == "message" and event.get("channel_type") == "im"


async def handle_event(app: IMApp, event: dict, client: SlackClient | None = None) -> None:
    """One Events API `event` (already verified and de-duplicated)."""
    if not _addressed(event):
        return
    client = client or SlackClient(app)
    user = event.get("user", "")
    sender = Sender(external_id=user, display_name=user, chat_id=event.get("channel", ""))
    if await sync_to_async(identities.linked_user)(app, user) is None:
        email = await client.email_of(user)  # a suggestion by e-mail, when the scope allows
        await sync_to_async(identities.suggest_by_email)(app, sender, email)
    thread_ts = event.get("thread_ts") or event.get("ts")
    thread = SlackThread(client, event["channel"], thread_ts)
    text = MENTION.sub("", event.get("text") or "").strip()
    await conversation.converse(app, thread, sender, f"{event['channel']}:{thread_ts}", text)


async def handle_action(app: IMApp, payload: dict, client: SlackClient | None = None) -> None:
    """A Block Kit button: Approve / Reject on an approval card, Stop on a running answer, or an
    alert card's Acknowledge / Investigate now / Silence 1 h."""
    client = client or SlackClient(app)
    action = (payload.get("actions") or [{}])[0]
    verb = (action.get("action_id") or "").removeprefix("im_")
    value = action.get("value") or ""
    channel = (payload.get("channel") or {}).get("id") or (payload.get("container") or {}).get(
        "channel_id", ""
    )
    message = payload.get("message") or {}
    user = (payload.get("user") or {}).get("id", "")
    if not value.isdigit():
        return
    with translation.override(await conversation.apresser_language(app, user)):
        await _press(app, client, verb, int(value), channel, message, user)


async def _press(
    app: IMApp, client: SlackClient, verb: str, value: int, channel: str, message: dict, user: str
):
    """A button press, answered in the thread's language."""
    if alert_presses.is_alert_verb(verb):
        answer = await alert_presses.apress(app, user, verb, value, chat_id=channel)
        # Only the presser sees it; beside the card (in its thread only when it is in one).
        await client.post_ephemeral(channel, user, answer, thread_ts=message.get("thread_ts"))
        return
    if verb == "stop":
        _, answer = await conversation.astop_pressed(app, user, value)
        await client.post_ephemeral(
            channel, user, answer, thread_ts=message.get("thread_ts") or message.get("ts")
        )
        return
    if verb not in ("approve", "reject"):
        return
    done, answer, card = await conversation.adecide(app, user, value, verb == "approve")
    thread = SlackThread(client, channel, message.get("thread_ts") or message.get("ts", ""))
    if not done:
        await client.post_ephemeral(channel, user, answer, thread_ts=thread.thread_ts)
    if card is not None and message.get("ts"):
        rendered, buttons = conversation.card_of(thread, card)
        await thread.edit(message["ts"], rendered, buttons)


async def handle_command(app: IMApp, form: dict, client: SlackClient | None = None) -> None:
    """The `/new [question]` slash command: a fresh conversation, in a new thread of the channel
    the command was typed in (a slash command carries no thread). Senders outside `allow_from`
    are ignored; unlinked ones get their link as an ephemeral message, visible to them only."""
    client = client or SlackClient(app)
    user, channel = form.get("user_id", ""), form.get("channel_id", "")
    sender = Sender(external_id=user, display_name=form.get("user_name", user), chat_id=channel)
    if await sync_to_async(identities.linked_user)(app, user) is None:
        await sync_to_async(identities.suggest_by_email)(app, sender, await client.email_of(user))
    verdict = await sync_to_async(identities.resolve)(app, sender)
    if not verdict.allowed:
        return
    with translation.override(await sync_to_async(thread_language)(app, verdict.user)):
        if verdict.user is None:
            await client.post_ephemeral(
                channel,
                user,
                _("Link your Ongrid account once, signed in, at %(url)s, then try again.")
                % {"url": verdict.link_url},
            )
            return
        question = (form.get("text") or "").strip()
        if question:
            opener = _("New conversation with %(who)s: %(question)s") % {
                "who": f"<@{user}>",
                "question": escape(question[:200]),
            }
        else:
            opener = _("New conversation with %(who)s") % {"who": f"<@{user}>"}
        root = await client.post_message(channel, opener, thread_ts=None)
    thread = SlackThread(client, channel, root)
    await conversation.converse(app, thread, sender, f"{channel}:{root}", f"/new {question}".strip())


# --- accepting deliveries (webhook or Socket Mode) ---------------------------------------------


async def accept_event(app: IMApp, body: dict) -> bool:
    """An Events API `event_callback` body: start its handling after the answer. False for a
    redelivery of an event already seen (by either way of delivery), which starts nothing."""
    if body.get("type") != "event_callback" or not body.get("event_id"):
        return True
    if not await deliveries.afirst_time(app, f"event:{body['event_id']}"):
        return False
    background.run_after_answer(handle_event(app, body.get("event") or {}), f"slack-{body['event_id']}")
    return True


def accept_interaction(app: IMApp, payload: dict) -> None:
    """An interactivity payload: Block Kit button presses are handled after the answer."""
    if payload.get("type") == "block_actions":
        background.run_after_answer(handle_action(app, payload), f"slack-action-{app.pk}")


def command_answer(form: dict) -> str:
    """What the typist of a slash command sees at once (ephemeral), in the active language:
    Ongrid knows only `/new`."""
    if form.get("command") != "/new":
        return _("Ongrid knows only /new.")
    return _("Starting a new conversation…")


async def acommand_answer(app: IMApp, form: dict) -> str:
    """`command_answer` in the language of the typist's thread (the app's, else theirs)."""
    with translation.override(await conversation.apresser_language(app, form.get("user_id", ""))):
        return command_answer(form)


async def accept_command(app: IMApp, form: dict) -> bool:
    """A slash command's fields: `/new` starts a conversation after the answer. False when nothing
    starts (another command, or a redelivery of the same trigger)."""
    if form.get("command") != "/new":
        return False
    if form.get("trigger_id") and not await deliveries.afirst_time(app, f"command:{form['trigger_id']}"):
        return False
    background.run_after_answer(handle_command(app, form), f"slack-command-{app.pk}")
    return True
