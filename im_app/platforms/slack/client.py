"""Slack Web API (https://api.slack.com/web): `POST <base>/<method>` with a bot token; every answer
is `{"ok": true, ...}` or `{"ok": false, "error": "..."}`; a 429 carries `Retry-After`."""

from __future__ import annotations

from im_app.platforms.http import PlatformError, send

MAX_TEXT = 3000  # characters of one section block's mrkdwn text


class SlackClient:
    def __init__(self, app) -> None:
        self.base = app.api_base
        self._token = app.bot_token or ""

    async def call(self, method: str, **params) -> dict:
        if not self._token:
            raise PlatformError("no bot token is configured")
        body = {key: value for key, value in params.items() if value is not None}
        return await _call(self.base, self._token, method, body)

    async def identity(self) -> str:
        me = await self.call("auth.test")
        return f"{me.get('user')} (bot {me.get('bot_id') or me.get('user_id')}) in {me.get('team')}"

    async def post_message(self, channel: str, text: str, *, thread_ts: str | None, blocks=None) -> str:
        sent = await self.call(
            "chat.postMessage", channel=channel, text=text, thread_ts=thread_ts, blocks=blocks
        )
        return sent["ts"]

    async def update(self, channel: str, ts: str, text: str, *, blocks=None) -> None:
        await self.call("chat.update", channel=channel, ts=ts, text=text, blocks=blocks or [])

    async def post_ephemeral(
        self, channel: str, user: str, text: str, *, thread_ts: str | None = None
    ) -> None:
        await self.call("chat.postEphemeral", channel=channel, user=user, text=text, thread_ts=thread_ts)

    async def email_of(self, user_id: str) -> str:
        try:
            info = await self.call("users.info", user=user_id)
        except PlatformError:
            return ""
        return ((info.get("user") or {}).get("profile") or {}).get("email", "")


async def _call(base: str, token: str, method: str, body: dict) -> dict:
    response = await send(
        "POST", f"{base}/{method}", json=body, headers={"Authorization": f"Bearer {token}"}, what=method
    )
    try:
        answer = response.json()
    except ValueError:
        raise PlatformError(
            f"{method}: HTTP {response.status_code}", response.status_code, call=method
        ) from None
    if not answer.get("ok"):
        raise PlatformError(
            f"{method}: {answer.get('error') or response.status_code}",
            response.status_code,
            call=method,
            code=answer.get("error") or "",
        )
    return answer


async def socket_mode_url(app) -> str:
    """Socket Mode's `apps.connections.open`: a one-time websocket URL for this app, asked with
    the app-level token (xapp-…), not the bot token. Each (re)connection needs a fresh one."""
    if not app.app_token:
        raise PlatformError("no app-level token (xapp-…) is configured for Socket Mode")
    answer = await _call(app.api_base, app.app_token, "apps.connections.open", {})
    if not answer.get("url"):
        raise PlatformError("apps.connections.open: no url in the answer")
    return answer["url"]
