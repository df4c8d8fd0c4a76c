"""A fake Slack Web API (https://api.slack.com/web) for tests: `POST /api/<method>` with a bearer
token; answers `{"ok": true, ...}` or `{"ok": false, "error": ...}` (HTTP 200, as Slack does); a
rate limit is HTTP 429 with `Retry-After`. Messages are kept by ts so tests read what a user sees.

Socket Mode (https://api.slack.com/apis/socket-mode) too: `apps.connections.open` with an app-level
token answers a one-time `ws://127.0.0.1:<port>/link/?ticket=…` URL served by a real websocket
server in a thread, which says `hello`, sends the envelopes a test pushes, records every
acknowledgement with its arrival time, and can send `disconnect` to make the client reconnect."""

from __future__ import annotations

import itertools
import json
import secrets
import socket as sockets
import threading
import time
from urllib.parse import parse_qs, urlsplit

from websockets.exceptions import ConnectionClosed
from websockets.protocol import State
from websockets.sync.server import ServerConnection, serve

from fakes.platform_http import PlatformFake


class FakeSlack(PlatformFake):
    name = "fake-slack"

    def __init__(
        self,
        token: str = "xoxb-test-token",
        emails: dict[str, str] | None = None,
        app_tokens: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.token = token
        # Socket Mode: app-level token -> Slack app id; the connections opened with each token, the
        # one-time tickets not used yet, and every acknowledgement {"token", "envelope_id", ...}.
        self.app_tokens = dict(app_tokens or {"xapp-test-token": "A1"})
        self.sockets: dict[str, list[ServerConnection]] = {}
        self.acks: list[dict] = []
        self._tickets: dict[str, str] = {}
        self._envelopes = itertools.count(1)
        self._ws_server = None
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

    # --- Socket Mode ------------------------------------------------------------------------------

    def start(self):
        super().start()
        self._ws_server = serve(self._socket, "127.0.0.1", 0)
        threading.Thread(target=self._ws_server.serve_forever, name=f"{self.name}-ws", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._ws_server is not None:
            self._ws_server.shutdown()
        super().stop()

    def connections(self, app_token: str = "xapp-test-token") -> int:
        """How many Socket Mode connections this token has had greeted with `hello` so far."""
        with self.lock:
            return len(self.sockets.get(app_token, []))

    def push(
        self,
        kind: str,
        payload: dict,
        *,
        app_token: str = "xapp-test-token",
        accepts_response_payload: bool = False,
    ) -> str:
        """Send an envelope (`events_api`, `slash_commands`, `interactive`) on the token's newest
        open connection; returns its envelope id."""
        envelope_id = f"env-{next(self._envelopes)}"
        self._current(app_token).send(
            json.dumps(
                {
                    "envelope_id": envelope_id,
                    "type": kind,
                    "payload": payload,
                    "accepts_response_payload": accepts_response_payload,
                    "retry_attempt": 0,
                    "retry_reason": "",
                }
            )
        )
        return envelope_id

    def disconnect(self, app_token: str = "xapp-test-token", reason: str = "refresh_requested") -> None:
        """What Slack does to rotate a connection: a `disconnect` message, then the close."""
        socket = self._current(app_token)
        socket.send(json.dumps({"type": "disconnect", "reason": reason, "debug_info": {"host": self.name}}))
        socket.close()

    def drop(self, app_token: str = "xapp-test-token") -> None:
        """A broken connection: the TCP socket goes away without a websocket close handshake."""
        self._current(app_token).socket.shutdown(sockets.SHUT_RDWR)

    def acked(self, envelope_id: str) -> dict | None:
        with self.lock:
            return next((ack for ack in self.acks if ack["envelope_id"] == envelope_id), None)

    def _current(self, app_token: str) -> ServerConnection:
        with self.lock:
            open_ones = [s for s in self.sockets.get(app_token, []) if s.state is State.OPEN]
        assert open_ones, f"no open Socket Mode connection for {app_token}"
        return open_ones[-1]

    def _apps_connections_open(self, body: dict, app_token: str) -> dict:
        ticket = secrets.token_hex(8)
        with self.lock:
            self._tickets[ticket] = app_token
        host, port = self._ws_server.socket.getsockname()[:2]
        return {
            "ok": True,
            "url": f"ws://{host}:{port}/link/?ticket={ticket}&app_id={self.app_tokens[app_token]}",
        }

    def _socket(self, connection: ServerConnection) -> None:
        """One client connection: a valid one-time ticket, `hello`, then record acknowledgements."""
        query = parse_qs(urlsplit(connection.request.path).query)
        with self.lock:
            app_token = self._tickets.pop((query.get("ticket") or [""])[0], None)
        if app_token is None:
            connection.close(code=1008, reason="invalid ticket")
            return
        connection.send(
            json.dumps(
                {
                    "type": "hello",
                    "num_connections": 1,
                    "connection_info": {"app_id": self.app_tokens[app_token]},
                    "debug_info": {"host": self.name, "approximate_connection_time": 18060},
                }
            )
        )
        with self.lock:
            self.sockets.setdefault(app_token, []).append(connection)
        try:
            for raw in connection:
                ack = json.loads(raw)
                with self.lock:
                    self.acks.append({"token": app_token, "at": time.monotonic(), **ack})
        except ConnectionClosed:
            pass  # the client went away without a clean close: nothing more to record

    # --- Web API ----------------------------------------------------------------------------------

    def answer(self, method: str, body: dict, headers: dict, path: str) -> tuple[int, dict, dict]:
        if method == "apps.connections.open":
            app_token = (headers.get("Authorization") or "").removeprefix("Bearer ")
            if app_token not in self.app_tokens:
                return 200, {"ok": False, "error": "invalid_auth"}, {}
            return 200, self._apps_connections_open(body, app_token), {}
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
