from django.urls import include, path
from rest_framework.routers import SimpleRouter

from agents_app import api

router = SimpleRouter()
router.register("api/agents/custom", api.UserAgentViewSet, basename="user-agent")

urlpatterns: list = [
    path("api/agents/", api.AgentCatalogView.as_view(), name="agent-catalog"),
    path("", include(router.urls)),
]
