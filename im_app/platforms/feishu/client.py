"""Feishu / Lark open platform (https://open.feishu.cn/document): an app's tenant_access_token from
its app id and secret, then `im/v1/messages` with it. Answers are `{"code": 0, "data": ...}`.

Every bot message is an interactive card (`msg_type: interactive`, built by `thread.card`),
because only cards can be edited in place for everyone (PATCH) and carry buttons (Stop,
Approve / Reject).
"""

from __future__ import annotations

import json
import time

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
        raise PlatformError(f"{what}: HTTP {response.status_code}", response.status_code, call=what) from None
    if answer.get("code") != 0:
        raise PlatformError(
            f"{what}: {answer.get('msg') or answer.get('code')}",
            response.status_code,
            call=what,
            code=answer.get("code") if answer.get("code") is not None else "",
        )
    return answer
