"""Feishu / Lark open platform (https://open.feishu.cn/document): an app's tenant_access_token from
its app id and secret, then `im/v1/messages` with it. Answers are `{"code": 0, ...}`."""

from __future__ import annotations

from im_app.platforms.http import PlatformError, send


class FeishuClient:
    def __init__(self, app) -> None:
        self.base = app.api_base
        self.app_id = app.app_id
        self._secret = app.app_secret or ""

    async def tenant_token(self) -> str:
        if not self.app_id or not self._secret:
            raise PlatformError("no app id / app secret is configured")
        response = await send(
            "POST",
            f"{self.base}/auth/v3/tenant_access_token/internal",
            json={"app_id": self.app_id, "app_secret": self._secret},
            what="tenant_access_token",
        )
        try:
            answer = response.json()
        except ValueError:
            raise PlatformError(f"tenant_access_token: HTTP {response.status_code}") from None
        if answer.get("code") != 0:
            raise PlatformError(f"tenant_access_token: {answer.get('msg') or answer.get('code')}")
        return answer["tenant_access_token"]

    async def identity(self) -> str:
        await self.tenant_token()
        return f"app {self.app_id} (tenant token issued)"
