"""A Feishu thread (chat + root message) as a `Thread`: every message is an interactive card in
card markdown, posted as a reply in the root's thread (or in the chat with no root) and edited
with PATCH; buttons are the card's action row."""

from __future__ import annotations

from im_app.models import IMApp
from im_app.platforms.feishu.client import MAX_TEXT, FeishuClient
from im_app.platforms.feishu.markup import CARD_MARKDOWN
from im_app.thread import Buttons, PlatformThread, button_parts


class FeishuThread(PlatformThread):
    """Replies go into the thread of `root` (the user's first message); with no root (a direct
    chat's main flow) they are plain messages in the chat."""

    markup = CARD_MARKDOWN
    max_text = MAX_TEXT
    streamed_tail = 4000

    def __init__(self, client: FeishuClient, chat_id: str, root: str = "", in_thread: bool = True) -> None:
        self.client, self.chat_id, self.root, self.in_thread = client, chat_id, root, in_thread

    def address(self) -> dict:
        return {"chat_id": self.chat_id, "root": self.root, "in_thread": self.in_thread}

    @classmethod
    def at(cls, app: IMApp, address: dict) -> FeishuThread:
        return cls(
            FeishuClient(app), address["chat_id"], address.get("root", ""), address.get("in_thread", True)
        )

    async def post(self, rendered: str, buttons: Buttons | None = None) -> str:
        return await self.client.send_card(
            self.chat_id, card(rendered, buttons), reply_to=self.root, in_thread=self.in_thread
        )

    async def edit(self, ref: str, rendered: str, buttons: Buttons | None = None) -> None:
        await self.client.update_card(ref, card(rendered, buttons))


def card(markdown: str, buttons: Buttons | None = None) -> dict:
    """An interactive card: the text, then a row of buttons whose value carries `im:<verb>:<id>`.
    `update_multi` makes it a shared card, the kind PATCH updates for everyone in the chat."""
    elements: list[dict] = [{"tag": "markdown", "content": markdown}]
    if buttons:
        elements.append({"tag": "action", "actions": [_button(label, data) for label, data in buttons]})
    return {"config": {"wide_screen_mode": True, "update_multi": True}, "elements": elements}


def _button(label: str, data: str) -> dict:
    verb, _target = button_parts(data)
    style = {"approve": "primary", "reject": "danger", "alert-acknowledge": "primary"}.get(verb, "default")
    return {
        "tag": "button",
        "text": {"tag": "plain_text", "content": label},
        "type": style,
        "value": {"im": data},
    }


def channel_thread(app: IMApp, chat_id: str) -> FeishuThread:
    """Posts in a chat, as new messages rather than replies (summaries, schedule copies)."""
    return FeishuThread(FeishuClient(app), chat_id, root="")
