"""The chat API on a real daphne (embedded shape): `?wait=1` blocks only its own request."""

from __future__ import annotations

import json
import threading
import urllib.request

import pytest

from fakes.openai_server import text
from ops_app.models import ApiToken

pytestmark = pytest.mark.django_db(transaction=True)


def request(base: str, token: str, method: str, path: str, body: dict | None = None) -> tuple[int, dict]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        base + path,
        data=data,
        method=method,
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as response:
        return response.status, json.loads(response.read() or b"{}")


def test_wait_returns_the_answer_while_the_server_keeps_serving(member, daphne_server, agents_llm):
    _, token = ApiToken.issue(member)
    asked, release = threading.Event(), threading.Event()

    def slow_model(request):
        asked.set()
        release.wait(timeout=30)
        return text("The answer is 42.")

    agents_llm.add("default", slow_model)
    status, chat = request(daphne_server, token, "POST", "/api/sessions/", {"title": "t"})
    assert status == 201
    result = {}

    def ask():
        result["reply"] = request(
            daphne_server,
            token,
            "POST",
            f"/api/sessions/{chat['id']}/messages/?wait=1",
            {"content": "what is the answer?"},
        )

    waiter = threading.Thread(target=ask)
    waiter.start()
    assert asked.wait(timeout=30)  # the turn is in flight, its request is waiting
    # While that request waits, the same server answers others (no deadlock on its sync thread).
    status, listing = request(daphne_server, token, "GET", "/api/sessions/")
    assert status == 200 and listing["results"][0]["id"] == chat["id"]
    release.set()
    waiter.join(timeout=60)
    status, body = result["reply"]
    assert status == 200 and body["answer"] == "The answer is 42." and body["status"] == "completed"
