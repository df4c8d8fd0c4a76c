"""Chat pages through the Django test client: ownership, sidebar actions, Stop."""

from __future__ import annotations

import pytest

from audit_app.models import AuditLog
from chat_app import services
from chat_app.models import ChatMessage, ChatSession

pytestmark = pytest.mark.django_db


@pytest.fixture
def chat(member):
    return services.start_chat(member)


def test_first_visit_shows_an_empty_new_chat_with_the_socket_and_composer_and_makes_no_row(client, member):
    client.force_login(member)
    response = client.get("/", follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == "/chat/new/"
    assert 'ws-connect="/ws/chat/new/"' in page and 'id="composer"' in page and "ws-send" in page
    assert not ChatSession.objects.exists()


def test_saved_transcript_renders_answer_notes_chips_and_tiles(client, member, chat):
    services.begin_turn(chat.pk, "what fills /var?")
    services.append_message(chat.pk, "assistant", "Dispatching now.", kind="note")
    worker = services.open_worker_session(chat, "specialist-disk", "Disk on web-01", "brief", "call-1")
    services.close_session(worker.pk, "completed", result="**38G** in /var/log")
    reviewer = services.open_worker_session(worker, "reviewer", "Review: restart nginx", "proposal", "w1")
    services.close_session(reviewer.pk, "completed", result="Decision: approve")
    AuditLog.objects.create(
        organization=chat.organization,
        session=chat,
        tool="query_incidents",
        tool_class="read",
        arguments='{"status": "firing"}',
        result="<b>[]</b>",
        status="ok",
        started_at=worker.created_at,
        duration_ms=4,
        tool_call_id="c0",
    )
    services.append_message(chat.pk, "assistant", "Your **logs** are big.")
    services.end_turn(chat.pk)
    client.force_login(member)
    page = client.get(f"/chat/{chat.pk}/").content.decode()
    assert "what fills /var?" in page and "Dispatching now." in page
    assert 'id="chip-c0"' in page and "status=firing" in page and "&lt;b&gt;[]&lt;/b&gt;" in page
    assert 'id="tile-' in page and "Disk on web-01" in page and "<strong>38G</strong>" in page
    assert f'id="tile-{reviewer.pk}"' in page and "Review: restart nginx" in page  # a grandchild too
    assert "Your <strong>logs</strong> are big." in page


def test_other_users_get_404_on_every_chat_url(client, chat, outsider, org):
    from ops_app.tenancy import roles
    from ops_app.tenancy.accounts import create_user

    for user in (outsider, create_user("bob", "bob-pass-123", org, roles.MEMBER)):
        client.force_login(user)
        assert client.get(f"/chat/{chat.pk}/").status_code == 404
        for action in ("rename", "delete", "stop"):
            assert client.post(f"/chat/{chat.pk}/{action}/", {"title": "x"}).status_code == 404
    assert ChatSession.objects.filter(pk=chat.pk).exists()


def test_rename_and_delete(client, member, chat):
    client.force_login(member)
    renamed = client.post(f"/chat/{chat.pk}/rename/", {"title": "  Disk on web-01 "})
    assert renamed.status_code == 200 and "Disk on web-01" in renamed.content.decode()
    assert 'id="crumb-title" hx-swap-oob="true">Disk on web-01</li>' in renamed.content.decode()
    assert ChatSession.objects.get(pk=chat.pk).title == "Disk on web-01"
    services.append_message(chat.pk, "user", "x")
    assert client.post(f"/chat/{chat.pk}/delete/").status_code == 302
    assert not ChatSession.objects.filter(pk=chat.pk).exists()
    assert not ChatMessage.objects.filter(session_id=chat.pk).exists()


def test_stop_buttons_flag_the_turn_and_a_worker(client, member, chat):
    worker = services.open_worker_session(chat, "specialist-disk", "d", "p")
    other = services.open_worker_session(chat, "specialist-compute", "c", "p")
    client.force_login(member)
    assert client.post(f"/chat/{chat.pk}/workers/{worker.pk}/stop/").status_code == 204
    assert ChatSession.objects.get(pk=worker.pk).stop_requested_at is not None
    assert ChatSession.objects.get(pk=other.pk).stop_requested_at is None
    assert client.post(f"/chat/{chat.pk}/stop/").status_code == 204
    assert ChatSession.objects.get(pk=other.pk).stop_requested_at is not None
    assert ChatSession.objects.get(pk=chat.pk).stop_requested_at is not None


def test_an_investigation_the_person_started_is_not_listed_among_their_chats(client, member, org):
    chat = services.start_chat(member, title="disk on web-01")
    services.start_investigation(org.pk, member, title="Investigation of incident #7")
    client.force_login(member)
    page = client.get(f"/chat/{chat.pk}/").content.decode()
    assert "disk on web-01" in page
    assert "Investigation of incident #7" not in page


def test_sidebar_lists_only_own_chats_newest_first_in_constant_queries(
    client, member, django_assert_max_num_queries
):
    chats = [services.start_chat(member, title=f"chat {i}") for i in range(30)]
    client.force_login(member)
    # 12 + the audit-role check and the estate examples (an incident, a device) of an empty chat,
    # the offline banner's look for an organization endpoint, and whether a Prometheus data source
    # exists (the example metrics question is offered only then)
    with django_assert_max_num_queries(16):
        page = client.get(f"/chat/{chats[0].pk}/").content.decode()
    assert page.index("chat 29") < page.index("chat 28")
