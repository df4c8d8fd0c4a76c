"""Websocket consumers. Thin: authenticate, join groups, forward events."""

from __future__ import annotations

import asyncio
import json

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer, AsyncWebsocketConsumer
from django.core.exceptions import PermissionDenied
from django.template.loader import render_to_string
from django.utils import timezone, translation
from django.utils.translation import gettext

from agents_app.api import astart_turn, events
from audit_app.queries import can_audit
from chat_app import services
from chat_app.groups import session_group, user_group
from chat_app.models import MAX_MESSAGE_CHARS, ChatSession, SessionStatus
from chat_app.services import TurnInProgress, title_from
from ops_app.core.languages import language_for_scope
from web_app.chat import fragments
from web_app.chat.transcript import build_turns
from web_app.rendering import EstateLinks, estate_links
from web_app.timezones import zone_for_scope

FLUSH_INTERVAL = 0.15


def _ends_segment(event: events.RuntimeEvent) -> bool:
    """The coordinator's own tool call, dispatch or note: what it streamed before is a lead-in."""
    if isinstance(event, events.ToolStarted):
        return not event.worker
    return isinstance(event, events.Note | events.WorkerStarted)


def frame_session(text_data: str | None) -> int | None:
    """The session a new-chat page's frame names, once its first message has made one."""
    try:
        session = json.loads(text_data or "").get("session")
    except (ValueError, AttributeError):
        return None
    return session if isinstance(session, int) and not isinstance(session, bool) else None


def read_chat_frame(text_data: str | None) -> tuple[str, str]:
    """(message, problem) from one frame of the chat page: a JSON object whose "message" is text
    of at most MAX_MESSAGE_CHARS. Anything else gives a problem to show, and the socket stays open."""
    try:
        data = json.loads(text_data) if text_data is not None else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("message", ""), str):
        return "", gettext('Not understood: send a JSON object like {"message": "your text"}.')
    message = data.get("message", "")
    if len(message.strip()) > MAX_MESSAGE_CHARS:
        return "", gettext("The message is too long: at most %(limit)s characters.") % {
            "limit": MAX_MESSAGE_CHARS
        }
    return message, ""


class UserEventsConsumer(AsyncJsonWebsocketConsumer):
    """A signed-in user's personal event stream (notifications, session list updates).

    Anonymous connections are refused at the handshake. Anything published to the user's group
    with type `user.event` is forwarded as JSON.
    """

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.group = user_group(user.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs) -> None:
        try:  # a frame that is not JSON text is answered, not a crash (1011)
            content = json.loads(text_data) if text_data is not None else None
        except ValueError:
            content = None
        await self.receive_json(content, **kwargs)

    async def receive_json(self, content, **kwargs) -> None:
        if not isinstance(content, dict):
            await self.send_json({"type": "error", "error": "send a JSON object"})
        elif content.get("type") == "ping":
            await self.send_json({"type": "pong", "user": self.scope["user"].get_username()})

    async def user_event(self, message: dict) -> None:
        await self.send_json(message.get("payload", {}))


class ChatConsumer(AsyncWebsocketConsumer):
    """One chat page's socket. Only the session's owner may connect. Sends HTMX fragments.

    Closing the socket never stops a turn: turns belong to the runtime, not to the connection.
    """

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        self.chat: ChatSession | None = None
        self.viewer = user.get_username()
        self.turn: int | None = None
        self.tiles: dict[int, dict] = {}
        self.pending_text: list[str] = []
        self.stream_text = ""  # the current segment of the coordinator's streamed text
        self.retrying = False  # a "Retrying…" line is shown in the running turn
        self.flusher: asyncio.Task | None = None
        self.links = EstateLinks()
        # What this viewer may follow from the fragments, and the zone and language their times
        # and words are shown in (the same choice as the pages: docs/i18n.md).
        self.audit = await database_sync_to_async(can_audit)(user)
        self.zone = await database_sync_to_async(zone_for_scope)(self.scope, user)
        self.language = await database_sync_to_async(language_for_scope)(self.scope, user)
        session_id = self.scope["url_route"]["kwargs"].get("session_id")
        if session_id is None:  # the new-chat page: its session is made by its first message
            await self.accept()
            return
        chat = await self._own_chat(session_id)
        if chat is None:
            await self.close(code=4403)
            return
        await self._bind(chat)
        await self.accept()
        await self._resync()

    async def _own_chat(self, session_id) -> ChatSession | None:
        return await ChatSession.objects.filter(
            pk=session_id, user=self.scope["user"], parent_session__isnull=True
        ).afirst()

    async def _bind(self, chat: ChatSession) -> None:
        """Follow `chat` from here on: its links and its event group."""
        self.chat = chat
        self.links = await database_sync_to_async(estate_links)(chat.organization_id, self.scope["user"])
        self.group = session_group(chat.pk)
        await self.channel_layer.group_add(self.group, self.channel_name)

    async def disconnect(self, code: int) -> None:
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)
        if getattr(self, "flusher", None):
            self.flusher.cancel()

    async def _resync(self) -> None:
        """After a (re)connect, redraw the last turn from the database: nothing missed stays
        missing. A running turn is followed from here on; one that ended while the socket was
        away (a daphne restart, a lost network) replaces its stale streaming bubble with the
        answer, the error or the stop line, and the Stop button goes."""
        chat = await ChatSession.objects.aget(pk=self.chat.pk)
        turns = await database_sync_to_async(build_turns)(
            chat, last=1, links=self.links, audit=self.audit, viewer=self.viewer
        )
        if not turns:
            return
        turn = turns[-1]
        running = chat.status == SessionStatus.RUNNING
        if running:
            self.turn = turn.key
            self.tiles = {item.data["id"]: item.data for item in turn.items if item.kind == "tile"}
        html = await self._localized(
            render_to_string, "chat/_turn.html", {"turn": turn, "oob": True, "chat_session_id": chat.pk}
        )
        controls = await self._localized(
            render_to_string,
            "chat/_turn_controls.html",
            {"running": running, "oob": True, "chat_session_id": chat.pk},
        )
        await self.send(text_data=html + controls)

    async def _localized(self, render, *args):
        """`render(*args)` in a thread, in the viewer's language and time zone."""

        def run():
            with translation.override(self.language), timezone.override(self.zone):
                return render(*args)

        return await sync_to_async(run)()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        with translation.override(self.language):
            message, problem = read_chat_frame(text_data)
        if problem:
            await self.send(text_data=await self._localized(fragments.error_bubble, problem))
            return
        if self.chat is None and not await self._adopt(frame_session(text_data), message):
            return
        try:
            await astart_turn(self.chat, message)
        except TurnInProgress:
            # Nothing typed is lost: the page keeps the text in the composer and sends it when
            # the running turn ends (docs/chat.md, "While a turn runs").
            await self.send(text_data=await self._localized(fragments.composer_held, message))
        except ValueError as exc:
            # The refusal was raised in English (the turn is not started in the viewer's language,
            # so the agents' own work is not); its catalog entry gives the viewer's words.
            refusal = str(exc)
            await self.send(text_data=await self._localized(lambda: fragments.error_bubble(gettext(refusal))))

    async def _adopt(self, session_id: int | None, message: str) -> bool:
        """A new-chat page's socket gets its session: the one the page already made (a reconnect
        names it in its frames), else a new one for this first message. True when a turn should
        start now. Nothing is created for an empty message: a session starts with a message."""
        if session_id is not None:
            chat = await self._own_chat(session_id)
            if chat is None:
                await self.close(code=4403)
                return False
            await self._bind(chat)
            await self._resync()
            return bool(message.strip())
        if not message.strip():
            empty = await self._localized(lambda: fragments.error_bubble(gettext("The message is empty.")))
            await self.send(text_data=empty)
            return False
        try:
            chat = await database_sync_to_async(services.start_chat)(self.scope["user"])
        except PermissionDenied as refusal:  # no organization: said, not a dropped socket
            reason = refusal.args[0] if refusal.args else ""  # lazy: worded in the viewer's language
            await self.send(text_data=await self._localized(lambda: fragments.error_bubble(str(reason))))
            return False
        await self._bind(chat)
        await self.send(text_data=await self._localized(fragments.chat_created, chat.pk, title_from(message)))
        return True

    async def turn_event(self, message: dict) -> None:
        event = events.parse(message["event"])
        if isinstance(event, events.TextDelta):
            if not event.worker and self.turn is not None:
                self._queue_text(event.text)
            return
        await self._flush()  # text streamed so far goes out before whatever comes next
        html = await self._localized(self._render, event) if event is not None else ""
        if html:
            await self.send(text_data=html)

    def _render(self, event: events.RuntimeEvent) -> str:
        if isinstance(event, events.TurnStarted):
            self.turn = event.message_id or 0
            title = ChatSession.objects.filter(pk=self.chat.pk).values_list("title", flat=True).first()
            return fragments.turn_started(self.turn, event.user_text, self.chat.pk, title or "")
        if isinstance(event, events.TurnQueued):
            return fragments.turn_queued() if self.turn is None else ""
        if self.turn is None:
            return ""
        return self._retry_done(event) + self._render_in_turn(event)

    def _retry_done(self, event: events.RuntimeEvent) -> str:
        """The coordinator's retry line goes as soon as anything else of the turn happens."""
        if not self.retrying or isinstance(event, events.LLMRetrying) or getattr(event, "worker", False):
            return ""
        self.retrying = False
        return fragments.retrying_cleared(self.turn)

    def _render_in_turn(self, event: events.RuntimeEvent) -> str:
        lead = self._end_segment() if _ends_segment(event) else ""
        return lead + self._render_event(event)

    def _end_segment(self) -> str:
        """Text streamed before a tool call, a dispatch or a note is its own bubble, above it."""
        text, self.stream_text = self.stream_text, ""
        return fragments.lead_in(self.turn, text, self.links) if text.strip() else ""

    def _render_event(self, event: events.RuntimeEvent) -> str:
        match event:
            case events.LLMRetrying(worker=True):
                return fragments.worker_activity(event.session, fragments.retrying_text(event))
            case events.LLMRetrying():
                self.retrying = True
                return fragments.llm_retrying(self.turn, event)
            case events.ToolStarted(worker=True):
                tile = self.tiles.get(event.session)
                if tile is None:
                    return fragments.worker_activity(event.session, f"{event.tool}…")
                return fragments.worker_tool_started(tile, event, self.chat.pk)
            case events.ToolStarted():
                return fragments.tool_started(self.turn, event)
            case events.ToolEnded(worker=True):
                tile = self.tiles.get(event.session)
                return fragments.worker_tool_ended(tile, event, self.audit) if tile else ""
            case events.ToolEnded():
                return fragments.tool_ended(self.turn, event, self.audit)
            case events.Note():
                return fragments.note(self.turn, event.text)
            case events.WorkerStarted():
                started = timezone.now().isoformat()
                tile = fragments.tile_context(event, self.links, self.audit, self.viewer, started=started)
                self.tiles[tile["id"]] = tile
                return fragments.worker_started(self.turn, event, self.chat.pk, tile)
            case events.WorkerStatus() | events.WorkerEnded():
                return self._tile_update(event)
            case events.ProposalPending() | events.ProposalDecided() | events.ProposalExecuted():
                return fragments.proposal_event(self.turn, event)
            case events.TurnEnded():
                html = fragments.turn_ended(
                    self.turn, event, self.chat.pk, self.links, tuple(self.tiles.values()), self.viewer
                )
                self.turn = None
                self.tiles = {}
                self.stream_text = ""
                return html
        return ""

    def _tile_update(self, event: events.WorkerStatus | events.WorkerEnded) -> str:
        tile = self.tiles.get(event.session)
        if tile is None:
            return ""
        tile["status"] = event.status or tile["status"]
        result = getattr(event, "result", "")
        if result:
            tile["result"] = fragments.render_answer(result, self.links)
        error = getattr(event, "error", "") or tile.get("error", "")
        tile["stopped"] = fragments.stopped_label(tile["status"], error, self.viewer)
        tile["error"] = "" if tile["stopped"] else error
        return fragments.worker_changed(tile, self.chat.pk)

    def _queue_text(self, text: str) -> None:
        """Coalesce token deltas: the segment so far is rendered and swapped at most every
        FLUSH_INTERVAL, so a long answer costs a few renders a second, not one per token."""
        self.pending_text.append(text)
        if self.flusher is None or self.flusher.done():
            self.flusher = asyncio.get_running_loop().create_task(self._flush_later())

    async def _flush_later(self) -> None:
        await asyncio.sleep(FLUSH_INTERVAL)
        await self._flush()

    async def _flush(self) -> None:
        if self.pending_text and self.turn is not None:
            self.stream_text += "".join(self.pending_text)
            self.pending_text = []
            cleared = fragments.retrying_cleared(self.turn) if self.retrying else ""
            self.retrying = False
            redrawn = fragments.stream_so_far(self.turn, self.stream_text, self.links)
            await self.send(text_data=cleared + redrawn)
