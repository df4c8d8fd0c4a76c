"""A Slack thread (channel + thread_ts, none for the channel's top level) as a `Thread`:
chat.postMessage / chat.update in mrkdwn, buttons as Block Kit."""

from __future__ import annotations

import datetime as dt

from im_app.models import IMApp
from im_app.platforms.slack.client import MAX_TEXT, SlackClient
from im_app.platforms.slack.markup import MRKDWN
from im_app.thread import Buttons, PlatformThread, button_parts, utc_words


class SlackThread(PlatformThread):
    markup = MRKDWN
    max_text = MAX_TEXT
    streamed_tail = 2500

    def __init__(self, client: SlackClient, channel: str, thread_ts: str | None) -> None:
        self.client, self.channel, self.thread_ts = client, channel, thread_ts

    def address(self) -> dict:
        return {"channel": self.channel, "thread_ts": self.thread_ts}

    @classmethod
    def at(cls, app: IMApp, address: dict) -> SlackThread:
        return cls(SlackClient(app), address["channel"], address.get("thread_ts"))

    async def post(self, rendered: str, buttons: Buttons | None = None) -> str:
        return await self.client.post_message(
            self.channel, rendered, thread_ts=self.thread_ts, blocks=blocks(rendered, buttons)
        )

    async def edit(self, ref: str, rendered: str, buttons: Buttons | None = None) -> None:
        await self.client.update(self.channel, ref, rendered, blocks=blocks(rendered, buttons))

    def moment(self, at: dt.datetime) -> str:
        """Slack's date token: each reader sees the time in their own time zone and format; the
        written-out UTC time is what clients that cannot show it display instead."""
        fallback = utc_words(at).replace("|", " ").replace(">", " ")
        return f"<!date^{int(at.timestamp())}^{{date_short_pretty}} {{time}}|{self.markup.text(fallback)}>"

    async def post_card(self, rendered: str, buttons: Buttons | None = None) -> dict:
        """As `PlatformThread.post_card`, keeping the channel id Slack answers: a message posted
        to `#oncall` is edited with `chat.update`, which only takes the channel's id."""
        sent = await self.client.call(
            "chat.postMessage",
            channel=self.channel,
            text=rendered,
            thread_ts=self.thread_ts,
            blocks=blocks(rendered, buttons),
        )
        address = {"channel": sent.get("channel") or self.channel, "thread_ts": self.thread_ts}
        return {"address": address, "message": sent["ts"]}


# Block Kit's button styles: the one action a card asks for is primary, a refusal is danger.
BUTTON_STYLES = {"approve": "primary", "reject": "danger", "alert-acknowledge": "primary"}


def blocks(rendered: str, buttons: Buttons | None) -> list | None:
    """Buttons need Block Kit: a section with the text and an actions block. Without buttons the
    message is plain mrkdwn text (and an update with no blocks removes earlier buttons). A button
    comes back as its `action_id` (`im_<verb>`) and `value` (the id)."""
    if not buttons:
        return None
    elements = []
    for label, data in buttons:
        verb, target = button_parts(data)
        button = {
            "type": "button",
            "text": {"type": "plain_text", "text": label},
            "action_id": f"im_{verb}",
            "value": target,
        }
        if verb in BUTTON_STYLES:
            button["style"] = BUTTON_STYLES[verb]
        elements.append(button)
    return [
        {"type": "section", "text": {"type": "mrkdwn", "text": rendered}},
        {"type": "actions", "elements": elements},
    ]


def channel_thread(app: IMApp, channel: str) -> SlackThread:
    """Posts at the top level of a channel (summaries, schedule copies)."""
    return SlackThread(SlackClient(app), channel, None)
