"""Feishu / Lark open platform (https://open.feishu.cn/document): an app's tenant_access_token from
its app id and secret, then `im/v1/messages` with it. Answers are `{"code": 0, "data": ...}`.

Every bot message is an interactive card (`msg_type: interactive`), because only cards can be
edited in place for everyone (PATCH) and carry buttons (Stop, Approve / Reject). Encrypted event
deliveries are opened here too (`decrypt`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from im_app.platforms.http import PlatformError, send

MAX_TEXT = 8000  # characters of one card's markdown (a card body may not exceed 30 KB)
TOKEN_MARGIN = 300.0  # seconds: a tenant token is renewed this long before it expires

# (api base, app id) -> (tenant token, monotonic expiry). Shared by every client of this process,
# so a busy bot asks for a token once per ~2 hours, not once per message.
_TOKENS: dict[tuple[str, str], tuple[str, float]] = {}


class FeishuClient:
    def __init__(self, app) -> None:
        self.base = app.api_base
        self.app_id = app.app_id
        self._secret = app.app_secret or ""

    async def tenant_token(self, *, fresh: bool = False) -> str:
        if not self.app_id or not self._secret:
            raise PlatformError("no app id / app secret is configured")
        cached = _TOKENS.get((self.base, self.app_id))
        if cached and not fresh and cached[1] > time.monotonic():
            return cached[0]
        response = await send(
            "POST",
            f"{self.base}/auth/v3/tenant_access_token/internal",
            json={"app_id": self.app_id, "app_secret": self._secret},
            what="tenant_access_token",
        )
        answer = _json(response, "tenant_access_token")
        token = answer["tenant_access_token"]
        lifetime = float(answer.get("expire") or 7200)
        _TOKENS[(self.base, self.app_id)] = (token, time.monotonic() + max(lifetime - TOKEN_MARGIN, 60.0))
        return token

    async def identity(self) -> str:
        await self.tenant_token(fresh=True)
        return f"app {self.app_id} (tenant token issued)"

    async def call(self, verb: str, path: str, what: str, body: dict) -> dict:
        token = await self.tenant_token()
        response = await send(
            verb,
            f"{self.base}/{path}",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
            what=what,
        )
        return _json(response, what).get("data") or {}

    async def send_card(
        self, chat_id: str, card: dict, *, reply_to: str = "", in_thread: bool = False
    ) -> str:
        """A new card in the chat, or a reply to `reply_to` (in its thread when `in_thread`)."""
        content = json.dumps(card, ensure_ascii=False)
        if reply_to:
            data = await self.call(
                "POST",
                f"im/v1/messages/{reply_to}/reply",
                "im.message.reply",
                {"msg_type": "interactive", "content": content, "reply_in_thread": in_thread},
            )
        else:
            data = await self.call(
                "POST",
                "im/v1/messages?receive_id_type=chat_id",
                "im.message.create",
                {"receive_id": chat_id, "msg_type": "interactive", "content": content},
            )
        return data["message_id"]

    async def update_card(self, message_id: str, card: dict) -> None:
        await self.call(
            "PATCH",
            f"im/v1/messages/{message_id}",
            "im.message.patch",
            {"content": json.dumps(card, ensure_ascii=False)},
        )


def _json(response, what: str) -> dict:
    try:
        answer = response.json()
    except ValueError:
        raise PlatformError(f"{what}: HTTP {response.status_code}") from None
    if answer.get("code") != 0:
        raise PlatformError(f"{what}: {answer.get('msg') or answer.get('code')}")
    return answer


def card(markdown: str, buttons: list | None = None) -> dict:
    """An interactive card: the text, then a row of buttons whose value carries `im:<verb>:<id>`.
    `update_multi` makes it a shared card, the kind PATCH updates for everyone in the chat."""
    elements: list[dict] = [{"tag": "markdown", "content": markdown}]
    if buttons:
        elements.append(
            {
                "tag": "action",
                "actions": [
                    {
                        "tag": "button",
                        "text": {"tag": "plain_text", "content": label},
                        "type": "primary"
                        if data.startswith("im:approve")
                        else "danger"
                        if data.startswith("im:reject")
                        else "default",
                        "value": {"im": data},
                    }
                    for label, data in buttons
                ],
            }
        )
    return {"config": {"wide_screen_mode": True, "update_multi": True}, "elements": elements}


# --- encrypted deliveries -------------------------------------------------------------------------


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


# --- Markdown (what the model writes) to card markdown ----------------------------------------

_CODE_BLOCK = re.compile(r"```[\w+-]*\n?(.*?)```", re.S)
_INLINE = re.compile(r"`([^`\n]+)`|\*\*(.+?)\*\*|\[([^\]\n]+)\]\((https?://[^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.M)


def escape(text: str) -> str:
    """Card markdown reads `<at …>`, `<font …>` tags and entities: &, < and > are escaped so the
    model's text can never mention everyone or restyle the card."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def to_card_markdown(markdown: str) -> str:
    """Card markdown from the model's Markdown: headings become bold lines (cards have none),
    bold, links and code are kept, everything else escaped."""
    parts: list[str] = []
    position = 0
    for block in _CODE_BLOCK.finditer(markdown):
        parts.append(_inline(markdown[position : block.start()]))
        parts.append(f"```\n{block.group(1).rstrip()}\n```")
        position = block.end()
    parts.append(_inline(markdown[position:]))
    return "".join(parts).strip()


def _inline(text: str) -> str:
    text = _HEADING.sub(lambda m: f"**{m.group(1)}**", text)
    out: list[str] = []
    position = 0
    for match in _INLINE.finditer(text):
        out.append(escape(text[position : match.start()]))
        code, bold, label, url = match.groups()
        if code is not None:
            out.append(f"`{code}`")
        elif bold is not None:
            out.append(f"**{escape(bold)}**")
        else:
            out.append(f"[{escape(label).replace(']', '')}]({url})")
        position = match.end()
    out.append(escape(text[position:]))
    return "".join(out)
