"""Websocket routes of every app, gathered in one list for the ASGI router."""

from web_app.routing import websocket_urlpatterns as chat_routes

websocket_urlpatterns = [*chat_routes]
