from django.urls import include, path
from rest_framework.routers import SimpleRouter

from chat_app.api import ChatSessionViewSet

router = SimpleRouter()
router.register("api/sessions", ChatSessionViewSet, basename="api-session")

urlpatterns = [path("", include(router.urls))]
