"""Issue 29, finding 15: a chat session starts with its first message, never with a page view.

Logging in, opening the chat, pressing "+ New chat" make no ChatSession row (so the audit list
has no empty sessions); the new-chat page's socket makes the row with the first message, tells
the page its address, and a reconnect of that socket follows the same chat.
"""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from chat_app import services
from chat_app.models import ChatSession
from fakes.openai_server import text
from ongrid_site.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("inline_executor")]
HEADERS = [(b"host", b"127.0.0.1"), (b"origin", b"http://127.0.0.1")]
DEADLINE = 20.0


@sync_to_async
def cookie_for(client, user) -> tuple[bytes, bytes]:
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def open_socket(path: str, cookie) -> tuple[WebsocketCommunicator, bool, int | None]:
    socket = WebsocketCommunicator(application, path, headers=[*HEADERS, cookie])
    connected, code = await socket.connect(timeout=5)
    return socket, connected, code


async def receive_until(socket, needle: str) -> str:
    seen = []
    async with asyncio.timeout(DEADLINE):
        while True:
            seen.append(await socket.receive_from(timeout=DEADLINE))
            if needle in seen[-1]:
                return "".join(seen)


def test_logging_in_and_viewing_the_chat_pages_make_no_session(client, member, org_admin):
    credentials = {"username": "alice", "password": "alice-pass-123"}
    response = client.post("/accounts/login/", credentials, follow=True)
    assert response.redirect_chain[-1][0] == "/chat/new/"
    assert "Ask about an incident" in response.content.decode()  # the empty chat, ready to type in
    client.get("/chat/")
    client.get("/chat/new/")
    pressed = client.post("/chat/new/")  # the old "+ New chat" form, still answered
    assert pressed.status_code == 302 and pressed["Location"] == "/chat/new/"
    assert not ChatSession.objects.exists()
    client.force_login(org_admin)
    audit = client.get("/audit/").content.decode()
    assert "/audit/sessions/" not in audit  # no empty session is listed for anyone to wade through


def test_the_chat_home_still_opens_the_newest_chat(client, member):
    older, newer = services.start_chat(member), services.start_chat(member)
    services.begin_turn(newer.pk, "hello")
    client.force_login(member)
    response = client.get("/chat/")
    assert response["Location"] == f"/chat/{newer.pk}/" and older.pk != newer.pk


async def test_the_first_message_makes_the_session_and_tells_the_page_its_address(client, member, agents_llm):
    agents_llm.add("default", text("Disk is fine."))
    cookie = await cookie_for(client, member)
    socket, ok, _ = await open_socket("/ws/chat/new/", cookie)
    assert ok
    assert not await ChatSession.objects.aexists()  # connecting makes nothing either
    await socket.send_json_to({"message": "  "})
    assert "The message is empty." in await socket.receive_from(timeout=DEADLINE)
    assert not await ChatSession.objects.aexists()

    await socket.send_json_to({"message": "how full is the disk on web-01?"})
    frames = await receive_until(socket, "Disk is fine.")
    chat = await ChatSession.objects.aget()
    assert chat.user_id == member.pk and chat.title == "how full is the disk on web-01?"
    assert f'data-session="{chat.pk}"' in frames and f'data-url="/chat/{chat.pk}/"' in frames
    assert f'id="chat-item-{chat.pk}"' in frames  # listed in the sidebar at once
    assert 'id="crumb-title" hx-swap-oob="true">how full is the disk on web-01?' in frames
    await socket.disconnect()

    # A reconnect of the same page names its session: it follows that chat, makes no other.
    agents_llm.add("default", text("Still fine."))
    socket, ok, _ = await open_socket("/ws/chat/new/", cookie)
    assert ok
    await socket.send_json_to({"session": chat.pk})
    assert "how full is the disk on web-01?" in await receive_until(socket, "Disk is fine.")  # redrawn
    await socket.send_json_to({"session": chat.pk, "message": "and now?"})
    await receive_until(socket, "Still fine.")
    assert await ChatSession.objects.acount() == 1
    await socket.disconnect()


async def test_a_new_chat_socket_cannot_adopt_someone_elses_session(client, member, outsider):
    theirs = await sync_to_async(services.start_chat)(outsider)
    socket, ok, _ = await open_socket("/ws/chat/new/", await cookie_for(client, member))
    assert ok
    await socket.send_json_to({"session": theirs.pk, "message": "let me in"})
    closed = await socket.receive_output(timeout=DEADLINE)
    assert closed == {"type": "websocket.close", "code": 4403}
    assert await ChatSession.objects.acount() == 1


async def test_a_first_message_without_an_organization_is_refused_in_words(client, django_user_model):
    lone = await sync_to_async(django_user_model.objects.create_user)("lone", password="lone-pass-123")
    socket, ok, _ = await open_socket("/ws/chat/new/", await cookie_for(client, lone))
    assert ok
    await socket.send_json_to({"message": "hello?"})
    assert "You belong to no organization" in await socket.receive_from(timeout=DEADLINE)
    assert not await ChatSession.objects.aexists()
    await socket.disconnect()
