from django.urls import include, path
from rest_framework.routers import SimpleRouter

from web_app.agents import api

router = SimpleRouter()
router.register("api/agents/custom", api.UserAgentViewSet, basename="user-agent")

urlpatterns: list = [
    path("api/agents/", api.AgentCatalogView.as_view(), name="agent-catalog"),
    path(
        "api/proposals/<int:pk>/approve/", api.ProposalSignView.as_view(approve=True), name="proposal-approve"
    ),
    path(
        "api/proposals/<int:pk>/reject/", api.ProposalSignView.as_view(approve=False), name="proposal-reject"
    ),
    path("", include(router.urls)),
]
