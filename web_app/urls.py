from django.urls import include, path

urlpatterns: list = [
    path("", include("web_app.agents.urls")),
    path("", include("web_app.chat.urls")),
    path("", include("web_app.audit.urls")),
]
