"""Telegram Bot API over HTTPS (https://core.telegram.org/bots/api): `POST <base>/bot<token>/<method>`
with a JSON body; every answer is `{"ok": true, "result": ...}` or `{"ok": false, "description"}`."""

from __future__ import annotations

from im_app.platforms.http import PlatformError, send

MAX_TEXT = 4096  # characters of one message's text, after entity parsing


class TelegramClient:
    def __init__(self, app) -> None:
        self.base = app.api_base
        self._token = app.bot_token or ""

    async def call(self, method: str, **params) -> object:
        if not self._token:
            raise PlatformError("no bot token is configured")
        body = {key: value for key, value in params.items() if value is not None}
        response = await send("POST", f"{self.base}/bot{self._token}/{method}", json=body, what=method)
        try:
            answer = response.json()
        except ValueError:
            raise PlatformError(
                f"{method}: HTTP {response.status_code}", response.status_code, call=method
            ) from None
        if not answer.get("ok"):
            raise PlatformError(
                f"{method}: {answer.get('description') or response.status_code}",
                response.status_code,
                call=method,
            )
        return answer.get("result")

    async def identity(self) -> str:
        me = await self.call("getMe")
        return f"@{me.get('username')} (id {me.get('id')})"

    async def send_message(self, chat_id, text: str, *, thread_id=None, markup: dict | None = None) -> int:
        sent = await self.call(
            "sendMessage",
            chat_id=chat_id,
            text=text,
            parse_mode="HTML",
            message_thread_id=thread_id,
            reply_markup=markup,
            link_preview_options={"is_disabled": True},
        )
        return sent["message_id"]

    async def edit_message(self, chat_id, message_id: int, text: str, *, markup: dict | None = None) -> None:
        try:
            await self.call(
                "editMessageText",
                chat_id=chat_id,
                message_id=message_id,
                text=text,
                parse_mode="HTML",
                reply_markup=markup,
                link_preview_options={"is_disabled": True},
            )
        except PlatformError as exc:
            if "message is not modified" not in str(exc):
                raise

    async def answer_callback(self, callback_id: str, text: str) -> None:
        await self.call("answerCallbackQuery", callback_query_id=callback_id, text=text[:200])

    async def updates(self, offset: int | None, hold_seconds: int = 50) -> list[dict]:
        return await self.call(
            "getUpdates", offset=offset, timeout=hold_seconds, allowed_updates=["message", "callback_query"]
        )
