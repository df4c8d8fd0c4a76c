"""Websocket consumers. Thin: authenticate, join groups, forward events."""

from __future__ import annotations

from channels.generic.websocket import AsyncJsonWebsocketConsumer

from chat_app.groups import user_group


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

    async def receive_json(self, content: dict, **kwargs) -> None:
        if content.get("type") == "ping":
            await self.send_json({"type": "pong", "user": self.scope["user"].get_username()})

    async def user_event(self, message: dict) -> None:
        await self.send_json(message.get("payload", {}))
