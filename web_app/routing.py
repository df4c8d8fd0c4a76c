from django.urls import path

from web_app.chat import consumers

websocket_urlpatterns = [
    path("ws/events/", consumers.UserEventsConsumer.as_asgi()),
    path("ws/chat/<int:session_id>/", consumers.ChatConsumer.as_asgi()),
]
