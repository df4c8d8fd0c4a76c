from django.urls import path

from web_app.chat import consumers

websocket_urlpatterns = [
    path("ws/events/", consumers.UserEventsConsumer.as_asgi()),
    path("ws/chat/new/", consumers.ChatConsumer.as_asgi()),  # the new-chat page, before its first message
    path("ws/chat/<int:session_id>/", consumers.ChatConsumer.as_asgi()),
]
