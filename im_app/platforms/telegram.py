"""Telegram Bot API over HTTPS (https://core.telegram.org/bots/api): `POST <base>/bot<token>/<method>`
with a JSON body; every answer is `{"ok": true, "result": ...}` or `{"ok": false, "description"}`."""

from __future__ import annotations

import html
import re

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
            raise PlatformError(f"{method}: HTTP {response.status_code}") from None
        if not answer.get("ok"):
            raise PlatformError(f"{method}: {answer.get('description') or response.status_code}")
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


# --- Markdown (what the model writes) to Telegram HTML ----------------------------------------

_CODE_BLOCK = re.compile(r"```[\w+-]*\n?(.*?)```", re.S)
_INLINE = re.compile(
    r"`([^`\n]+)`|\*\*(.+?)\*\*|\[([^\]\n]+)\]\((https?://[^)\s]+)\)|(?<![\w*])\*([^*\n]+)\*(?!\w)"
)
_HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.M)


def to_html(markdown: str) -> str:
    """Telegram's HTML subset from the model's Markdown: code blocks, inline code, bold, italics,
    links, headings as bold. Everything else is escaped, so no text can break the markup."""
    parts: list[str] = []
    position = 0
    for block in _CODE_BLOCK.finditer(markdown):
        parts.append(_inline_html(markdown[position : block.start()]))
        parts.append(f"<pre>{html.escape(block.group(1).rstrip(), quote=False)}</pre>")
        position = block.end()
    parts.append(_inline_html(markdown[position:]))
    return "".join(parts).strip()


def _inline_html(text: str) -> str:
    text = _HEADING.sub(lambda m: f"**{m.group(1)}**", text)
    out: list[str] = []
    position = 0
    for match in _INLINE.finditer(text):
        out.append(html.escape(text[position : match.start()], quote=False))
        code, bold, label, url, italic = match.groups()
        if code is not None:
            out.append(f"<code>{html.escape(code, quote=False)}</code>")
        elif bold is not None:
            out.append(f"<b>{html.escape(bold, quote=False)}</b>")
        elif label is not None:
            out.append(f'<a href="{html.escape(url)}">{html.escape(label, quote=False)}</a>')
        else:
            out.append(f"<i>{html.escape(italic, quote=False)}</i>")
        position = match.end()
    out.append(html.escape(text[position:], quote=False))
    return "".join(out)
