from django.urls import path

from incidents_app import consumers

websocket_urlpatterns = [
    path("ws/incidents/<int:incident_id>/", consumers.IncidentConsumer.as_asgi()),
]
