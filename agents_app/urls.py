from django.urls import include, path
from rest_framework.routers import SimpleRouter

from agents_app import api
from agents_app.metrics import metrics_view

router = SimpleRouter()
router.register("api/agents/custom", api.UserAgentViewSet, basename="user-agent")

urlpatterns: list = [
    path("metrics", metrics_view, name="metrics"),
    path("api/agents/", api.AgentCatalogView.as_view(), name="agent-catalog"),
    path("", include(router.urls)),
]
