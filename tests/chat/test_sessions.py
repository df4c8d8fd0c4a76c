"""Session rows and transcripts: the tree, terminal states, bounded history, the reaper."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from chat_app import services
from chat_app.models import ChatSession, MessageRole, SessionStatus
from tests.support.django_subprocess import ROOT, child_env


@pytest.fixture
def chat(member):
    return services.start_chat(member)


@pytest.mark.django_db
def test_worker_row_exists_before_it_runs_and_points_at_the_tree(chat):
    worker = services.open_worker_session(chat, "specialist-disk", "Check /var on web-01", "brief")
    assert worker.status == SessionStatus.PENDING
    assert (worker.parent_session_id, worker.root_session_id) == (chat.pk, chat.pk)
    assert worker.organization_id == chat.organization_id
    assert list(worker.messages.values_list("role", "content")) == [("user", "brief")]
    services.mark_running(worker.pk)
    worker.refresh_from_db()
    assert worker.status == SessionStatus.RUNNING and worker.started_at is not None


@pytest.mark.django_db
def test_close_is_idempotent_and_first_terminal_state_wins(chat):
    worker = services.open_worker_session(chat, "specialist-disk", "d", "p")
    assert services.close_session(worker.pk, SessionStatus.KILLED, error="stopped by user")
    assert not services.close_session(worker.pk, SessionStatus.COMPLETED, result="late")
    worker.refresh_from_db()
    assert worker.status == SessionStatus.KILLED and worker.closed_at is not None and worker.result == ""
    with pytest.raises(ValueError):
        services.close_session(worker.pk, SessionStatus.RUNNING)


@pytest.mark.django_db
def test_chat_without_organization_is_refused(django_user_model):
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        services.start_chat(django_user_model.objects.create_user("nobody", password="pw-nobody-1"))


@pytest.mark.django_db
def test_first_message_titles_the_session(chat):
    services.begin_turn(chat.pk, "  Disk is   full on web-01, what's eating it?  ")
    chat.refresh_from_db()
    assert chat.title == "Disk is full on web-01, what's eating it?"
    assert chat.status == SessionStatus.RUNNING


@pytest.mark.django_db
def test_history_is_bounded_and_never_splits_a_tool_call_from_its_result(chat):
    call = [{"id": "c1", "type": "function", "function": {"name": "query_incidents", "arguments": "{}"}}]
    for i in range(30):
        services.append_message(chat.pk, MessageRole.USER, f"question {i}")
        services.append_message(chat.pk, MessageRole.ASSISTANT, "", tool_calls=call)
        services.append_message(chat.pk, MessageRole.TOOL, "[]", tool_call_id="c1")
        services.append_message(chat.pk, MessageRole.ASSISTANT, f"answer {i}")
    window = services.history(chat.pk, limit=50)
    assert len(window) <= 50
    assert window[0] == {"role": "user", "content": window[0]["content"]}
    assert window[-1]["content"] == "answer 29"
    for i, message in enumerate(window):
        if message["role"] == "tool":
            assert window[i - 1]["tool_calls"][0]["id"] == message["tool_call_id"]
    # A window that would start on a tool result starts at the next user message instead.
    odd = services.history(chat.pk, limit=47)
    assert odd[0]["role"] == "user"


OWNER = """
import django, sys, time
django.setup()
from chat_app import services
from chat_app.models import ChatSession
parent = ChatSession.objects.get(pk=int(sys.argv[1]))
worker = services.open_worker_session(parent, "specialist-disk", "long job", "p")
services.mark_running(worker.pk)
print(worker.pk, flush=True)
time.sleep(600)
"""


@pytest.mark.django_db(transaction=True)
def test_reaper_closes_rows_of_a_process_killed_mid_run(chat):
    child = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(chat.pk)],
        cwd=ROOT,
        env=child_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        worker_id = int(child.stdout.readline())
        assert services.reap_orphans() == 0  # its owner is alive
        assert ChatSession.objects.get(pk=worker_id).status == SessionStatus.RUNNING
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    assert services.reap_orphans() == 1
    worker = ChatSession.objects.get(pk=worker_id)
    assert worker.status == SessionStatus.FAILED
    assert worker.closed_at is not None
    assert "gone" in worker.error
    assert not ChatSession.objects.filter(status__in=["pending", "running"]).exists()
