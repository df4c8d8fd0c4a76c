"""The chat API: a user's own sessions, turns (202 or ?wait=1), the worker tree, Stop."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from chat_app import services
from chat_app.models import ChatSession
from fakes.openai_server import call, text, tool_calls

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("inline_executor")]


def api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_create_list_and_ask_with_wait_returns_the_answer_and_the_tree(member, agents_llm):
    client = api(member)
    created = client.post("/api/sessions/", {"title": "disk on web-01"}, format="json")
    assert created.status_code == 201
    session_id = created.json()["id"]
    agents_llm.add(
        "default",
        tool_calls(
            call(
                "AgentTool",
                {
                    "description": "du /var",
                    "subagent_type": "specialist-disk",
                    "prompt": "On web-01, what fills /var?",
                },
            )
        ),
        text("**/var/log** holds 38G."),
    )
    agents_llm.add("specialist-disk", text("/var/log 38G"))
    answer = client.post(
        f"/api/sessions/{session_id}/messages/?wait=1", {"content": "what fills /var?"}, format="json"
    )
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["status"] == "completed" and body["answer"] == "**/var/log** holds 38G."

    detail = client.get(f"/api/sessions/{session_id}/").json()
    assert detail["status"] == "idle"
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant", "tool", "assistant"]

    tree = client.get(f"/api/sessions/{session_id}/tree/").json()
    assert [c["persona"] for c in tree["children"]] == ["specialist-disk"]
    worker = tree["children"][0]
    assert worker["status"] == "completed" and worker["result"] == "/var/log 38G"
    assert [c["tool"] for c in tree["timeline"] if c["type"] == "call"] == ["AgentTool"]
    assert not any(e["type"] == "message" for e in worker["timeline"])  # no worker transcript
    assert [s["id"] for s in client.get("/api/sessions/").json()["results"]] == [session_id]


def test_without_wait_the_turn_is_accepted_and_runs_in_the_background(member, agents_llm):
    from agents_app.runtime.turns import wait_for_turn

    client = api(member)
    session_id = client.post("/api/sessions/", {}, format="json").json()["id"]
    agents_llm.add("default", text("hello"))
    accepted = client.post(f"/api/sessions/{session_id}/messages/", {"content": "hi"}, format="json")
    assert accepted.status_code == 202 and accepted.json()["turn_id"]
    wait_for_turn(session_id, None, timeout=30)  # the row is the shared truth: running → idle
    assert ChatSession.objects.get(pk=session_id).messages.filter(role="assistant", content="hello").exists()


def test_a_second_message_while_a_turn_runs_is_a_409_naming_the_running_turn(member):
    chat = services.start_chat(member)
    running = services.begin_turn(chat.pk, "first question")  # the turn in progress
    response = api(member).post(f"/api/sessions/{chat.pk}/messages/", {"content": "again"}, format="json")
    assert response.status_code == 409 and "already running" in response.json()["detail"]
    assert response.json()["running_turn_id"] == running.pk
    assert not chat.messages.filter(content="again").exists()  # nothing half-stored


def test_stop_records_who_stopped_it(member):
    chat = services.start_chat(member)
    worker = services.open_worker_session(chat, "specialist-disk", "d", "p")
    api(member).post(f"/api/sessions/{chat.pk}/stop/")
    assert ChatSession.objects.get(pk=worker.pk).stop_reason == "stopped by alice"


def test_empty_message_is_a_400(member):
    chat = services.start_chat(member)
    assert (
        api(member).post(f"/api/sessions/{chat.pk}/messages/", {"content": "  "}, format="json").status_code
        == 400
    )


def test_stop_flags_the_session_and_its_open_workers(member):
    chat = services.start_chat(member)
    worker = services.open_worker_session(chat, "specialist-disk", "d", "p")
    response = api(member).post(f"/api/sessions/{chat.pk}/stop/")
    assert response.status_code == 202
    assert ChatSession.objects.get(pk=worker.pk).stop_requested_at is not None


def test_other_users_and_tenants_get_404_and_anonymous_401(member, outsider, org):
    from ops_app.tenancy import roles
    from ops_app.tenancy.accounts import create_user

    chat = services.start_chat(member)
    colleague = create_user("bob", "bob-pass-123", org, roles.MEMBER)
    for user in (outsider, colleague):
        client = api(user)
        assert client.get(f"/api/sessions/{chat.pk}/").status_code == 404
        assert (
            client.post(f"/api/sessions/{chat.pk}/messages/", {"content": "x"}, format="json").status_code
            == 404
        )
        assert client.post(f"/api/sessions/{chat.pk}/stop/").status_code == 404
        assert client.get("/api/sessions/").json()["results"] == []
    assert APIClient().get("/api/sessions/").status_code in (401, 403)


def test_openapi_schema_lists_the_chat_endpoints(member):
    response = api(member).get("/api/schema/")
    assert response.status_code == 200
    assert b"/api/sessions/{id}/messages/" in response.content
