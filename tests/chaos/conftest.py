"""What the fault tests share: a chat client over the public API (a token, as an operator's
script or the IM bridge would use), a websocket to a chat page's socket, and a fake model that
holds its answer until the test has broken something.

Each test starts its own Redis / PostgreSQL (tests/support/servers.py), so killing them touches
nothing another test or engineer uses."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass

import pytest

from fakes.openai_server import RecordedRequest, Reply, text
from tests.support import procs

pytestmark = pytest.mark.services


@dataclass
class ChatClient:
    """One user's chats through /api/ on a daphne; `base` may change when daphne is replaced."""

    base: str
    token: str

    def call(self, method: str, path: str, body: dict | None = None, timeout: float = 10) -> tuple[int, dict]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.base + path,
            data=data,
            method=method,
            headers={"Authorization": f"Token {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.status, json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def new_chat(self) -> int:
        status, chat = self.call("POST", "/api/sessions/", {"title": "chaos"})
        assert status == 201, chat
        return chat["id"]

    def send(self, chat: int, content: str) -> None:
        status, body = self.call("POST", f"/api/sessions/{chat}/messages/", {"content": content})
        assert status == 202, body

    def stop(self, chat: int) -> None:
        status, body = self.call("POST", f"/api/sessions/{chat}/stop/")
        assert status == 202, body

    def session(self, chat: int) -> dict:
        status, body = self.call("GET", f"/api/sessions/{chat}/")
        assert status == 200, body
        return body

    def wait_idle(self, chat: int, timeout: float) -> dict:
        """The chat once its turn has ended (`idle`), whatever happened to the servers meanwhile."""

        def idle():
            body = self.session(chat)
            return body if body["status"] == "idle" else None

        return procs.wait_until(idle, timeout, f"chat {chat} to be idle again", interval=0.25)


def chat_socket(server_ws_base: str, chat: int, cookie: str):
    """The chat page's websocket, as the browser opens it (same origin, session cookie)."""
    from websockets.sync.client import connect

    origin = server_ws_base.replace("ws://", "http://")
    return connect(
        f"{server_ws_base}/ws/chat/{chat}/",
        origin=origin,
        additional_headers={"Cookie": f"sessionid={cookie}"},
        open_timeout=10,
    )


def frames_until(socket, needle: str, timeout: float) -> str:
    """Read frames until one contains `needle`; everything read, for the failure message."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        try:
            frame = socket.recv(timeout=max(0.1, deadline - time.monotonic()))
        except TimeoutError:
            break
        seen.append(frame)
        if needle in frame:
            return frame
    raise AssertionError(f"no frame with {needle!r} within {timeout:.0f}s; got {seen!r}"[:3000])


def texts(session: dict, role: str = "assistant") -> list[str]:
    return [m["content"] for m in session["messages"] if m["role"] == role]


def healthz(base: str) -> tuple[int, dict, float]:
    """(status, body, seconds it took) of one anonymous probe, as a load balancer sends it."""
    started = time.monotonic()
    try:
        with urllib.request.urlopen(base + "/healthz", timeout=30) as response:
            status, body = response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        status, body = exc.code, json.loads(exc.read())
    return status, body, time.monotonic() - started


class HeldAnswer:
    """A fake-model route: the first request waits until `release()` (or until the client hangs
    up, for Stop), then gets `answer`; later requests get `then` at once. `asked` is set as soon
    as the first request is in, so a test breaks things while the turn is provably mid-flight."""

    def __init__(self, answer: str, then: str = "the next answer") -> None:
        self.answer = answer
        self.then = then
        self.asked = threading.Event()
        self._release = threading.Event()
        self._first = True
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        with self._lock:
            first, self._first = self._first, False
        if not first:
            return text(self.then)
        self.asked.set()
        self._release.wait(timeout=120)
        return text(self.answer)

    def wait_asked(self, timeout: float = 60) -> None:
        assert self.asked.wait(timeout), "the turn never reached the model"

    def release(self) -> None:
        self._release.set()


@pytest.fixture
def chat_token(member) -> str:
    from ops_app.models import ApiToken

    _, token = ApiToken.issue(member)
    return token


@pytest.fixture
def session_cookie(member) -> str:
    """The `sessionid` cookie of a signed-in browser of `member`, for the chat websocket."""
    from django.test import Client

    client = Client()
    client.force_login(member)
    return client.cookies["sessionid"].value
