from django.urls import include, path
from rest_framework.routers import SimpleRouter

from web_app.chat import views
from web_app.chat.api import ChatSessionViewSet

router = SimpleRouter()
router.register("api/sessions", ChatSessionViewSet, basename="api-session")

urlpatterns = [
    path("", include(router.urls)),
    path("chat/", views.chat_home, name="chat-home"),
    path("chat/new/", views.chat_new, name="chat-new"),
    path("chat/<int:session_id>/", views.chat_page, name="chat-page"),
    path("chat/<int:session_id>/rename/", views.chat_rename, name="chat-rename"),
    path("chat/<int:session_id>/delete/", views.chat_delete, name="chat-delete"),
    path("chat/<int:session_id>/stop/", views.chat_stop, name="chat-stop"),
    path("chat/<int:session_id>/workers/<int:worker_id>/stop/", views.worker_stop, name="chat-worker-stop"),
]
