from django.urls import path

from chat_app import consumers

websocket_urlpatterns = [
    path("ws/events/", consumers.UserEventsConsumer.as_asgi()),
    path("ws/chat/<int:session_id>/", consumers.ChatConsumer.as_asgi()),
]
