"""A fake Telegram Bot API (https://core.telegram.org/bots/api) for tests: `POST /bot<token>/<method>`
with JSON; answers `{"ok": true, "result": ...}`; a wrong token gets 401, a rate limit 429 with
`parameters.retry_after` (and the header). Messages are kept per chat so tests read what a user
would see; `getUpdates` serves queued updates by offset and holds a long poll briefly."""

from __future__ import annotations

import itertools
import threading

from fakes.platform_http import PlatformFake


class FakeTelegram(PlatformFake):
    name = "fake-telegram"

    def __init__(self, token: str = "123456:TEST-token", username: str = "ongrid_test_bot") -> None:
        super().__init__()
        self.token, self.username = token, username
        self.messages: dict[int, dict] = {}  # message_id -> {"chat_id", "text", "reply_markup", "edits"}
        self._ids = itertools.count(1000)
        self._updates: list[dict] = []
        self._update_ids = itertools.count(1)
        self._new_update = threading.Condition(self.lock)
        self.callback_answers: list[dict] = []

    @property
    def api_base(self) -> str:
        return self.base_url

    def push_update(self, **update) -> dict:
        """Queue an update for getUpdates (the update_id is allocated unless given)."""
        with self._new_update:
            update.setdefault("update_id", next(self._update_ids))
            self._updates.append(update)
            self._new_update.notify_all()
        return update

    def bot_texts(self, chat_id) -> list[str]:
        with self.lock:
            return [m["text"] for m in self.messages.values() if m["chat_id"] == chat_id]

    def method_of(self, verb: str, path: str) -> str:
        return path.split("/")[-1]

    def rate_limited(self, retry_after: float) -> tuple[int, dict, dict]:
        body = {
            "ok": False,
            "error_code": 429,
            "description": f"Too Many Requests: retry after {retry_after:g}",
            "parameters": {"retry_after": retry_after},
        }
        return 429, body, {}

    def answer(self, method: str, body: dict, headers: dict, path: str) -> tuple[int, dict, dict]:
        if not path.startswith(f"/bot{self.token}/"):
            return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}, {}
        handler = getattr(self, f"_{method}", None)
        if handler is None:
            return 404, {"ok": False, "error_code": 404, "description": "Not Found"}, {}
        return handler(body)

    def _ok(self, result) -> tuple[int, dict, dict]:
        return 200, {"ok": True, "result": result}, {}

    def _getMe(self, body: dict):
        return self._ok({"id": int(self.token.split(":")[0]), "is_bot": True, "username": self.username})

    def _sendMessage(self, body: dict):
        if len(body.get("text", "")) > 4096:
            return (
                400,
                {"ok": False, "error_code": 400, "description": "Bad Request: message is too long"},
                {},
            )
        with self.lock:
            message_id = next(self._ids)
            self.messages[message_id] = {
                "chat_id": body["chat_id"],
                "text": body.get("text", ""),
                "reply_markup": body.get("reply_markup"),
                "thread_id": body.get("message_thread_id"),
                "edits": 0,
            }
        return self._ok({"message_id": message_id, "chat": {"id": body["chat_id"]}, "text": body.get("text")})

    def _editMessageText(self, body: dict):
        if len(body.get("text", "")) > 4096:
            return (
                400,
                {"ok": False, "error_code": 400, "description": "Bad Request: message is too long"},
                {},
            )
        with self.lock:
            message = self.messages.get(body.get("message_id"))
            if message is None or message["chat_id"] != body.get("chat_id"):
                return (
                    400,
                    {"ok": False, "error_code": 400, "description": "Bad Request: message to edit not found"},
                    {},
                )
            if message["text"] == body.get("text") and message["reply_markup"] == body.get("reply_markup"):
                return (
                    400,
                    {"ok": False, "error_code": 400, "description": "Bad Request: message is not modified"},
                    {},
                )
            message.update(text=body.get("text", ""), reply_markup=body.get("reply_markup"))
            message["edits"] += 1
        return self._ok({"message_id": body["message_id"], "text": body.get("text")})

    def _answerCallbackQuery(self, body: dict):
        with self.lock:
            self.callback_answers.append(body)
        return self._ok(True)

    def _getUpdates(self, body: dict):
        offset = int(body.get("offset") or 0)
        hold = min(float(body.get("timeout") or 0), 2.0)
        with self._new_update:
            self._new_update.wait_for(
                lambda: any(u["update_id"] >= offset for u in self._updates), timeout=hold
            )
            if offset:
                self._updates = [u for u in self._updates if u["update_id"] >= offset]  # confirmed
            return self._ok(list(self._updates))
