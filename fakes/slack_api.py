"""A fake Slack Web API (https://api.slack.com/web) for tests: `POST /api/<method>` with a bearer
token; answers `{"ok": true, ...}` or `{"ok": false, "error": ...}` (HTTP 200, as Slack does); a
rate limit is HTTP 429 with `Retry-After`. Messages are kept by ts so tests read what a user sees."""

from __future__ import annotations

import itertools

from fakes.platform_http import PlatformFake


class FakeSlack(PlatformFake):
    name = "fake-slack"

    def __init__(self, token: str = "xoxb-test-token", emails: dict[str, str] | None = None) -> None:
        super().__init__()
        self.token = token
        self.emails = dict(emails or {})  # Slack user id -> profile e-mail (users.info)
        self.messages: dict[str, dict] = {}  # ts -> {"channel", "text", "thread_ts", "blocks"}
        self.ephemeral: list[dict] = []
        self._ts = itertools.count(1)

    @property
    def api_base(self) -> str:
        return self.base_url + "/api"

    def thread_texts(self, thread_ts: str) -> list[str]:
        with self.lock:
            return [
                m["text"] for ts, m in self.messages.items() if m["thread_ts"] == thread_ts or ts == thread_ts
            ]

    def answer(self, method: str, body: dict, headers: dict, path: str) -> tuple[int, dict, dict]:
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 200, {"ok": False, "error": "invalid_auth"}, {}
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            return 200, {"ok": False, "error": "unknown_method"}, {}
        return 200, handler(body), {}

    def _auth_test(self, body: dict) -> dict:
        return {"ok": True, "user": "ongrid", "user_id": "UBOT", "bot_id": "BBOT", "team": "Acme"}

    def _chat_postMessage(self, body: dict) -> dict:
        with self.lock:
            ts = f"1700000000.{next(self._ts):06d}"
            self.messages[ts] = {
                "channel": body["channel"],
                "text": body.get("text", ""),
                "thread_ts": body.get("thread_ts"),
                "blocks": body.get("blocks") or [],
            }
        return {"ok": True, "channel": body["channel"], "ts": ts}

    def _chat_update(self, body: dict) -> dict:
        with self.lock:
            message = self.messages.get(body.get("ts"))
            if message is None or message["channel"] != body.get("channel"):
                return {"ok": False, "error": "message_not_found"}
            message.update(text=body.get("text", ""), blocks=body.get("blocks") or [])
        return {"ok": True, "channel": body["channel"], "ts": body["ts"]}

    def _chat_postEphemeral(self, body: dict) -> dict:
        with self.lock:
            self.ephemeral.append(body)
        return {"ok": True, "message_ts": "1700000000.999999"}

    def _users_info(self, body: dict) -> dict:
        email = self.emails.get(body.get("user", ""))
        if email is None:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "user": {"id": body["user"], "profile": {"email": email}}}
