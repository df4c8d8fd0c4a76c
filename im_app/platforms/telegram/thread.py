"""A Telegram chat (+ forum topic) as a `Thread`: sendMessage / editMessageText in Telegram HTML,
buttons as an inline keyboard whose callback_data is the button's data."""

from __future__ import annotations

from im_app.models import IMApp
from im_app.platforms.telegram.client import MAX_TEXT, TelegramClient
from im_app.platforms.telegram.markup import HTML
from im_app.thread import Buttons, PlatformThread


class TelegramThread(PlatformThread):
    markup = HTML
    max_text = MAX_TEXT
    streamed_tail = 3000

    def __init__(self, client: TelegramClient, chat_id, topic_id=None) -> None:
        self.client, self.chat_id, self.topic_id = client, chat_id, topic_id

    def address(self) -> dict:
        return {"chat_id": self.chat_id, "topic_id": self.topic_id}

    @classmethod
    def at(cls, app: IMApp, address: dict) -> TelegramThread:
        return cls(TelegramClient(app), address["chat_id"], address.get("topic_id"))

    async def post(self, rendered: str, buttons: Buttons | None = None) -> int:
        return await self.client.send_message(
            self.chat_id, rendered, thread_id=self.topic_id, markup=keyboard(buttons)
        )

    async def edit(self, ref: int, rendered: str, buttons: Buttons | None = None) -> None:
        await self.client.edit_message(self.chat_id, ref, rendered, markup=keyboard(buttons))

    def progress(self, lines: list[str], streamed: str) -> str:
        return super().progress(lines, streamed)[: self.max_text]  # Telegram refuses longer texts


def keyboard(buttons: Buttons | None) -> dict | None:
    if buttons is None:
        return None
    return {"inline_keyboard": [[{"text": label, "callback_data": data} for label, data in buttons]]}


def channel_thread(app: IMApp, chat_id: str) -> TelegramThread:
    """Posts in a chat, outside any forum topic (summaries, schedule copies)."""
    return TelegramThread(TelegramClient(app), chat_id)
