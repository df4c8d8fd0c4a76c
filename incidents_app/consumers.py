"""The incident page's websocket. Thin: check the viewer may see the incident, join its group,
and answer every progress event with the redrawn investigation block."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.utils import translation

from incidents_app.access import visible_incidents
from incidents_app.fragments import live_fragments, viewer_of
from incidents_app.runner import incident_group
from ops_app.core.languages import language_for_scope


def may_see(user, incident_id: int) -> bool:
    return visible_incidents(user).filter(pk=incident_id).exists()


class IncidentConsumer(AsyncWebsocketConsumer):
    """Members (and auditors) of the incident's organization may connect; anyone else is refused
    at the handshake (4401 signed out, 4403 not theirs). Sends nothing the viewer sends back."""

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
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The page only listens; frames from it are ignored."""

    async def incident_event(self, message: dict) -> None:
        await self._redraw()

    async def _redraw(self) -> None:
        await self.send(text_data=await database_sync_to_async(self._render)())

    def _render(self) -> str:
        """The live fragments in the viewer's language, as the page around them (docs/i18n.md)."""
        with translation.override(self.language):
            return live_fragments(self.incident_id, self.viewer)
