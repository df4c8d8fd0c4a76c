"""Websocket frames that are not what the page sends: answered with an error, the socket stays open
(never a 1011 crash), and a chat message is capped like the API's."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import translation

from chat_app import services
from chat_app.models import MAX_MESSAGE_CHARS, ChatMessage
from ongrid_site.asgi import application
from web_app.chat.consumers import read_chat_frame

pytestmark = pytest.mark.django_db(transaction=True)
SAME_ORIGIN = [(b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


@sync_to_async
def cookie_for(client, user) -> tuple[bytes, bytes]:
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


def test_a_chat_frame_must_be_an_object_with_text_within_the_api_cap():
    with translation.override("en"):  # the words of the problems; other tests may leave a language on
        assert read_chat_frame('{"message": "hello", "HEADERS": {}}') == ("hello", "")
        assert read_chat_frame(json.dumps({"message": "x" * MAX_MESSAGE_CHARS})) == (
            "x" * MAX_MESSAGE_CHARS,
            "",
        )
        for frame in ("[1, 2]", '"hello"', "42", "null", "{not json", None, '{"message": ["a"]}'):
            message, problem = read_chat_frame(frame)
            assert message == "" and "JSON object" in problem, frame
        message, problem = read_chat_frame(json.dumps({"message": "x" * (MAX_MESSAGE_CHARS + 1)}))
        assert message == "" and f"at most {MAX_MESSAGE_CHARS} characters" in problem


def test_the_api_uses_the_same_cap():
    from web_app.chat.api import PostMessageSerializer

    assert PostMessageSerializer().fields["content"].max_length == MAX_MESSAGE_CHARS


async def test_bad_chat_frames_get_an_error_and_the_socket_stays_open(client, member):
    chat = await sync_to_async(services.start_chat)(member)
    socket = WebsocketCommunicator(
        application, f"/ws/chat/{chat.pk}/", headers=[*SAME_ORIGIN, await cookie_for(client, member)]
    )
    connected, _ = await socket.connect(timeout=5)
    assert connected
    frames = [
        ("[1, 2]", "JSON object"),
        ('"just a string"', "JSON object"),
        ("{broken", "JSON object"),
        (json.dumps({"message": "x" * 1_000_000}), "too long"),
    ]
    for frame, expected in frames:
        await socket.send_to(text_data=frame)
        reply = await socket.receive_from(timeout=5)
        assert expected in reply, reply
    await socket.send_to(bytes_data=b"\x00\x01")
    assert "JSON object" in await socket.receive_from(timeout=5)
    assert await socket.receive_nothing(timeout=0.2)  # no close frame: still open
    assert not await ChatMessage.objects.filter(session=chat).aexists()  # nothing was started
    await socket.disconnect()


async def test_the_events_socket_answers_non_objects_and_keeps_going(client, member):
    socket = WebsocketCommunicator(
        application, "/ws/events/", headers=[*SAME_ORIGIN, await cookie_for(client, member)]
    )
    connected, _ = await socket.connect(timeout=5)
    assert connected
    for frame in ("[1]", '"ping"', "{broken"):
        await socket.send_to(text_data=frame)
        assert await socket.receive_json_from(timeout=5) == {"type": "error", "error": "send a JSON object"}
    await socket.send_to(bytes_data=b"\xff")
    assert (await socket.receive_json_from(timeout=5))["type"] == "error"
    await socket.send_json_to({"type": "ping"})
    assert await socket.receive_json_from(timeout=5) == {"type": "pong", "user": "alice"}
    await socket.disconnect()


async def test_the_sockets_answers_are_in_the_browsers_language(client, member):
    chat = await sync_to_async(services.start_chat)(member)
    spanish = [(b"accept-language", b"es-ES,es;q=0.9,en;q=0.5")]
    socket = WebsocketCommunicator(
        application,
        f"/ws/chat/{chat.pk}/",
        headers=[*SAME_ORIGIN, *spanish, await cookie_for(client, member)],
    )
    connected, _ = await socket.connect(timeout=5)
    assert connected
    await socket.send_to(text_data="[1, 2]")
    reply = await socket.receive_from(timeout=5)
    assert "No se entiende: envía un objeto JSON" in reply and "Not understood" not in reply
    await socket.send_to(text_data=json.dumps({"message": "   "}))
    reply = await socket.receive_from(timeout=5)
    assert "El mensaje está vacío." in reply, reply
    await socket.disconnect()
