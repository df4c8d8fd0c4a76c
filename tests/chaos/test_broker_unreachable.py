"""The task queue (Redis) unreachable when a message comes in: the turn cannot be queued, so it
ends at once as failed, saying so, with the user's message kept, instead of showing "Queued"
until the reaper. Run in a real process whose REDIS_URL names a port nobody listens on."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from agents_app.runtime.executors import UNQUEUED
from chat_app import services
from chat_app.models import ChatMessage, ChatSession, MessageKind, SessionStatus
from tests.support import procs
from tests.support.django_subprocess import ROOT, child_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.services]

SEND = """
import sys, django
django.setup()
from agents_app.api import start_turn
from chat_app.models import ChatSession
start_turn(ChatSession.objects.get(pk=int(sys.argv[1])), "is anyone there?")
"""


def test_a_turn_that_cannot_be_queued_ends_failed_at_once(member, tmp_path):
    chat = services.start_chat(member, title="no broker")
    env = child_env(REDIS_URL=f"redis://127.0.0.1:{procs.free_port()}/0", ONGRID_DATA_DIR=str(tmp_path))
    started = time.monotonic()
    sent = subprocess.run(
        [sys.executable, "-c", SEND, str(chat.pk)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    took = time.monotonic() - started
    assert sent.returncode == 0, sent.stderr[-3000:]
    assert "could not queue the turn" in sent.stderr
    chat.refresh_from_db()
    assert chat.status == SessionStatus.IDLE and chat.owner == ""
    assert chat.error == UNQUEUED
    rows = list(
        ChatMessage.objects.filter(session=chat).order_by("seq").values_list("role", "kind", "content")
    )
    assert rows == [
        ("user", MessageKind.TEXT, "is anyone there?"),
        ("assistant", MessageKind.ERROR, UNQUEUED),
    ]
    assert took < 20, f"sending took {took:.0f}s with the broker down"  # ~4 s of retries + startup
    assert ChatSession.objects.filter(status=SessionStatus.RUNNING).count() == 0
