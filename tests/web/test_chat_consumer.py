"""The chat websocket through the real ASGI stack: who may connect, and what a turn looks like."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from chat_app import services
from chat_app.models import ChatMessage, ChatSession
from fakes.openai_server import call, text, tool_calls
from ongrid_site.asgi import application

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("inline_executor")]
ORIGIN = (b"origin", b"http://127.0.0.1")
HOST = (b"host", b"127.0.0.1")  # the origin check compares the Origin with the Host (same origin)
DEADLINE = 20.0


@sync_to_async
def cookie_for(client, user) -> tuple[bytes, bytes]:
    client.force_login(user)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def connect(chat_id: int, headers) -> tuple[WebsocketCommunicator, bool, int | None]:
    communicator = WebsocketCommunicator(application, f"/ws/chat/{chat_id}/", headers=[HOST, *headers])
    connected, code = await communicator.connect(timeout=5)
    return communicator, connected, code


async def receive_until(communicator, needle: str) -> str:
    """Everything the socket sent up to and including the frame containing `needle`."""
    seen = []
    async with asyncio.timeout(DEADLINE):
        while True:
            frame = await communicator.receive_from(timeout=DEADLINE)
            seen.append(frame)
            if needle in frame:
                return "".join(seen)


@pytest.fixture
def chat(member):
    return services.start_chat(member)


async def test_only_the_owner_may_connect(client, chat, org, outsider):
    from ops_app.tenancy import roles
    from ops_app.tenancy.accounts import create_user

    colleague = await sync_to_async(create_user)("bob", "bob-pass-123", org, roles.MEMBER)
    owner, ok, _ = await connect(
        chat.pk, [ORIGIN, await cookie_for(client, await sync_to_async(lambda: chat.user)())]
    )
    assert ok
    await owner.disconnect()
    for user in (colleague, outsider):
        _, ok, code = await connect(chat.pk, [ORIGIN, await cookie_for(client, user)])
        assert not ok and code == 4403
    _, ok, code = await connect(chat.pk, [ORIGIN])
    assert not ok and code == 4401


async def test_a_turn_streams_escaped_tokens_chips_a_tile_and_the_final_markdown(
    client, chat, member, agents_llm
):
    agents_llm.add(
        "default",
        tool_calls(call("query_incidents", {"status": "firing"})),
        tool_calls(
            call(
                "AgentTool",
                {
                    "description": "Disk on web-01",
                    "subagent_type": "specialist-disk",
                    "prompt": "On web-01 find what fills /var.",
                },
            )
        ),
        text("<script>alert(1)</script> **/var/log** is full", chunk_size=3),
    )
    agents_llm.add("specialist-disk", text("/var/log holds 38G"))
    socket, ok, _ = await connect(chat.pk, [ORIGIN, await cookie_for(client, member)])
    assert ok
    await socket.send_json_to({"message": "what fills /var on web-01?"})
    frames = await receive_until(socket, 'id="turn-controls" hx-swap-oob="true"></span>')
    assert "what fills /var on web-01?" in frames  # the user's bubble
    assert 'id="chat-link-' in frames  # the sidebar entry takes the first message as its title
    assert 'id="chip-' in frames and "query_incidents" in frames and "status=firing" in frames
    assert 'id="tile-' in frames and "specialist-disk" in frames and "Disk on web-01" in frames
    assert "completed" in frames and "/var/log holds 38G" in frames  # the tile's result
    # streamed text, coalesced and redrawn as sanitised Markdown: far fewer swaps than the
    # model's 16 deltas of 3 characters, and the model's <script> is never sent as HTML
    assert 1 <= frames.count('hx-swap-oob="innerHTML">') < 16
    assert "<script" not in frames
    assert "<strong>/var/log</strong> is full" in frames  # the final answer, rendered and sanitised
    await socket.disconnect()


async def test_sendmessage_reaches_the_socket_before_the_turn_ends(client, chat, member, agents_llm):
    note_seen = threading.Event()

    def finish_after_note(request):
        assert note_seen.wait(timeout=DEADLINE), "the note never reached the browser"
        return text("done")

    agents_llm.add(
        "default",
        tool_calls(call("SendMessage", {"message": "Dispatching specialist-disk, one moment."})),
        finish_after_note,
    )
    socket, ok, _ = await connect(chat.pk, [ORIGIN, await cookie_for(client, member)])
    assert ok
    await socket.send_json_to({"message": "check the disk"})
    frames = await receive_until(socket, "Dispatching specialist-disk, one moment.")
    assert 'class="bubble note"' in frames
    note_seen.set()
    await receive_until(socket, "done")
    await socket.disconnect()


async def test_two_tabs_both_stream_and_closing_one_does_not_stop_the_turn(client, chat, member, agents_llm):
    go_on = threading.Event()

    def slow(request):
        go_on.wait(timeout=DEADLINE)
        return text("finished for everyone")

    agents_llm.add("default", slow)
    cookie = await cookie_for(client, member)
    first, ok1, _ = await connect(chat.pk, [ORIGIN, cookie])
    second, ok2, _ = await connect(chat.pk, [ORIGIN, cookie])
    assert ok1 and ok2
    await first.send_json_to({"message": "long question"})
    await receive_until(second, "long question")
    await first.disconnect()  # the browser goes away mid-turn
    go_on.set()
    # The answer replaces the stream when the turn has ended (the row is idle by then).
    ended = await receive_until(second, 'class="bubble assistant answer"')
    assert "finished for everyone" in ended
    await second.disconnect()
    row = await ChatSession.objects.aget(pk=chat.pk)
    assert row.status == "idle" and row.error == ""


async def test_reconnecting_mid_turn_redraws_the_running_tile(client, chat, member, agents_llm):
    release = threading.Event()

    def slow_worker(request):
        release.wait(timeout=DEADLINE)
        return text("38G in /var/log")

    agents_llm.add(
        "default",
        tool_calls(
            call(
                "AgentTool",
                {
                    "description": "Disk on web-01",
                    "subagent_type": "specialist-disk",
                    "prompt": "On web-01 find what fills /var.",
                },
            )
        ),
        text("all good"),
    )
    agents_llm.add("specialist-disk", slow_worker)
    cookie = await cookie_for(client, member)
    first, _, _ = await connect(chat.pk, [ORIGIN, cookie])
    await first.send_json_to({"message": "disk?"})
    await receive_until(first, 'data-status="running"')
    await first.disconnect()
    again, ok, _ = await connect(chat.pk, [ORIGIN, cookie])  # a reload or a new tab
    assert ok
    redraw = await receive_until(again, "Disk on web-01")
    assert 'data-status="running"' in redraw and "disk?" in redraw and ">Stop<" in redraw
    release.set()
    assert "all good" in await receive_until(again, "all good")
    await again.disconnect()


async def test_a_message_while_a_turn_runs_is_handed_back_to_the_composer(client, chat, member):
    await ChatSession.objects.filter(pk=chat.pk).aupdate(status="running")
    socket, ok, _ = await connect(chat.pk, [ORIGIN, await cookie_for(client, member)])
    assert ok
    await socket.send_json_to({"message": "another <one>"})
    frame = await receive_until(socket, "composer-held")
    assert 'data-text="another &lt;one&gt;"' in frame  # the page puts it back and sends it later
    assert "bubble error" not in frame
    assert not await ChatMessage.objects.filter(session=chat, content__startswith="another").aexists()
    await socket.disconnect()
