"""A fake Feishu / Lark open API (https://open.feishu.cn/document) for tests, under `/open-apis`:
`auth/v3/tenant_access_token/internal` issues a tenant token for the right app id and secret;
`im/v1/messages` create (`?receive_id_type=chat_id`), `im/v1/messages/<id>/reply`, and PATCH / PUT
`im/v1/messages/<id>` need `Authorization: Bearer <tenant token>`. Answers are
`{"code": 0, "msg": "success", "data": ...}`; a rate limit is HTTP 429 with code 99991400 and
`x-ogw-ratelimit-reset`. Messages are kept by id so tests read the cards a user would see."""

from __future__ import annotations

import itertools
import json
import re

from fakes.platform_http import PlatformFake

MESSAGE_PATH = re.compile(r"^/open-apis/im/v1/messages/(?P<id>[^/?]+)(?P<reply>/reply)?$")


class FakeFeishu(PlatformFake):
    name = "fake-feishu"

    def __init__(self, app_id: str = "cli_test_app", app_secret: str = "feishu-app-secret") -> None:
        super().__init__()
        self.app_id, self.app_secret = app_id, app_secret
        self.token = "t-fake-tenant-token"
        self.messages: dict[str, dict] = {}  # id -> {"chat_id", "root_id", "in_thread", "card", "edits"}
        self._ids = itertools.count(1)

    @property
    def api_base(self) -> str:
        return self.base_url + "/open-apis"

    def text(self, message_id: str) -> str:
        """What the card shows: its markdown elements, joined."""
        with self.lock:
            elements = self.messages[message_id]["card"].get("elements", [])
        return "\n".join(e.get("content", "") for e in elements if e.get("tag") == "markdown")

    def buttons(self, message_id: str) -> list[dict]:
        with self.lock:
            elements = self.messages[message_id]["card"].get("elements", [])
        return [b for e in elements if e.get("tag") == "action" for b in e.get("actions", [])]

    def thread(self, root_id: str) -> list[str]:
        with self.lock:
            ids = [i for i, m in self.messages.items() if m["root_id"] == root_id]
        return [self.text(i) for i in ids]

    def method_of(self, verb: str, path: str) -> str:
        path = path.split("?")[0]
        if path.endswith("/tenant_access_token/internal"):
            return "tenant_access_token"
        if path == "/open-apis/im/v1/messages":
            return "im.message.create"
        match = MESSAGE_PATH.match(path)
        if match and match.group("reply"):
            return "im.message.reply"
        if match:
            return {"PATCH": "im.message.patch", "PUT": "im.message.update"}.get(verb, "unknown")
        return "unknown"

    def rate_limited(self, retry_after: float) -> tuple[int, dict, dict]:
        return (
            429,
            {"code": 99991400, "msg": "request trigger frequency limit"},
            {"x-ogw-ratelimit-reset": f"{retry_after:g}"},
        )

    def answer(self, method: str, body: dict, headers: dict, path: str) -> tuple[int, dict, dict]:
        if method == "tenant_access_token":
            if (body.get("app_id"), body.get("app_secret")) != (self.app_id, self.app_secret):
                return 200, {"code": 10003, "msg": "invalid app_id or app_secret"}, {}
            return 200, {"code": 0, "msg": "ok", "tenant_access_token": self.token, "expire": 7200}, {}
        if headers.get("Authorization") != f"Bearer {self.token}":
            return 400, {"code": 99991663, "msg": "Invalid access token for authorization."}, {}
        if method == "unknown":
            return 404, {"code": 404, "msg": "not found"}, {}
        if method in ("im.message.create", "im.message.reply"):
            return self._send(method, body, path)
        return self._edit(method, body, path)

    def _content(self, body: dict) -> dict | None:
        try:
            content = json.loads(body.get("content") or "")
        except ValueError:
            return None
        return content if isinstance(content, dict) else None

    def _send(self, method: str, body: dict, path: str) -> tuple[int, dict, dict]:
        content = self._content(body)
        if content is None or body.get("msg_type") != "interactive":
            return 400, {"code": 230001, "msg": "invalid message content"}, {}
        with self.lock:
            message_id = f"om_{next(self._ids):06d}"
            if method == "im.message.reply":
                parent = self.messages.get(MESSAGE_PATH.match(path.split("?")[0]).group("id"))
                root = MESSAGE_PATH.match(path.split("?")[0]).group("id")
                chat_id = parent["chat_id"] if parent else "oc_from_user"
                root = parent["root_id"] if parent and parent["root_id"] else root
            else:
                chat_id, root = body.get("receive_id", ""), ""
            self.messages[message_id] = {
                "chat_id": chat_id,
                "root_id": root,
                "in_thread": bool(body.get("reply_in_thread")),
                "card": content,
                "edits": 0,
            }
        return 200, {"code": 0, "msg": "success", "data": {"message_id": message_id, "chat_id": chat_id}}, {}

    def _edit(self, method: str, body: dict, path: str) -> tuple[int, dict, dict]:
        message_id = MESSAGE_PATH.match(path.split("?")[0]).group("id")
        content = self._content(body)
        with self.lock:
            message = self.messages.get(message_id)
            if message is None:
                return 400, {"code": 230011, "msg": "message not found"}, {}
            if content is None:
                return 400, {"code": 230001, "msg": "invalid message content"}, {}
            if method == "im.message.patch" and not message["card"].get("config", {}).get("update_multi"):
                return 400, {"code": 230099, "msg": "card is not a shared card"}, {}
            message.update(card=content)
            message["edits"] += 1
        return 200, {"code": 0, "msg": "success", "data": {}}, {}
