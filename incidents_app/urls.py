from django.urls import include, path
from rest_framework.routers import SimpleRouter

from incidents_app import views
from incidents_app.api import IncidentViewSet

router = SimpleRouter()
router.register("api/incidents", IncidentViewSet, basename="api-incident")

urlpatterns = [
    path("", include(router.urls)),
    path("incidents/", views.incident_list, name="incident-list"),
    path("incidents/<int:incident_id>/", views.incident_page, name="incident-page"),
    path("incidents/<int:incident_id>/investigate/", views.incident_investigate, name="incident-investigate"),
    path(
        "incidents/<int:incident_id>/acknowledge/",
        views.incident_transition,
        {"action": "acknowledge"},
        name="incident-acknowledge",
    ),
    path(
        "incidents/<int:incident_id>/resolve/",
        views.incident_transition,
        {"action": "resolve"},
        name="incident-resolve",
    ),
    path(
        "incidents/<int:incident_id>/actions/<int:index>/send/",
        views.incident_send_action,
        name="incident-send-action",
    ),
    path(
        "incidents/<int:incident_id>/pressed/<int:action_id>/sign/",
        views.incident_sign_action,
        name="incident-sign-action",
    ),
    path("incidents/<int:incident_id>/ask/", views.incident_ask, name="incident-ask"),
    path("devices/<int:device_id>/", views.device_page, name="device-page"),
]
