"""The incident page's websocket. Thin: check the viewer may see the incident, join its group,
and answer every progress event with the redrawn investigation block."""

from __future__ import annotations

import asyncio

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.utils import translation

from incidents_app import actions
from incidents_app.access import visible_incidents
from incidents_app.fragments import live_fragments, viewer_of
from incidents_app.runner import incident_group
from ops_app.core.languages import language_for_scope

FOLLOW_SECONDS = 0.5


def may_see(user, incident_id: int) -> bool:
    return visible_incidents(user).filter(pk=incident_id).exists()


class IncidentConsumer(AsyncWebsocketConsumer):
    """Members (and auditors) of the incident's organization may connect; anyone else is refused
    at the handshake (4401 signed out, 4403 not theirs). Sends nothing the viewer sends back."""

    follower: asyncio.Task | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=4401)
            return
        incident_id = self.scope["url_route"]["kwargs"]["incident_id"]
        if not await database_sync_to_async(may_see)(user, incident_id):
            await self.close(code=4403)
            return
        self.incident_id = incident_id
        self.viewer = await database_sync_to_async(viewer_of)(user)
        self.language = await database_sync_to_async(language_for_scope)(self.scope, user)
        self.group = incident_group(incident_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self._redraw()  # whatever happened between the page render and this connect

    async def disconnect(self, code: int) -> None:
        if self.follower is not None:
            self.follower.cancel()
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The page only listens; frames from it are ignored."""

    async def incident_event(self, message: dict) -> None:
        await self._redraw()

    async def _redraw(self) -> None:
        await self.send(text_data=await database_sync_to_async(self._render)())
        if self.follower is None or self.follower.done():
            if await database_sync_to_async(actions.any_open)(self.incident_id):
                self.follower = asyncio.create_task(self._follow())

    async def _follow(self) -> None:
        """While a pressed change is on its way through the gate, look at it every
        FOLLOW_SECONDS and redraw when it moves on: the gate runs in another process or thread
        and tells only its own session, so the page's socket asks (docs/incidents.md, "Actions")."""
        seen = await database_sync_to_async(actions.signature)(self.incident_id)
        while True:
            await asyncio.sleep(FOLLOW_SECONDS)
            now = await database_sync_to_async(actions.signature)(self.incident_id)
            if now != seen:
                seen = now
                await self.send(text_data=await database_sync_to_async(self._render)())
            if not await database_sync_to_async(actions.any_open)(self.incident_id):
                return

    def _render(self) -> str:
        """The live fragments in the viewer's language, as the page around them (docs/i18n.md)."""
        with translation.override(self.language):
            return live_fragments(self.incident_id, self.viewer)
