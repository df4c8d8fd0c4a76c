"""Websocket routes of every app, gathered in one list for the ASGI router."""

from incidents_app.routing import websocket_urlpatterns as incident_routes
from web_app.routing import websocket_urlpatterns as chat_routes

websocket_urlpatterns = [*chat_routes, *incident_routes]
