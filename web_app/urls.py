from django.urls import include, path

from web_app import preferences

urlpatterns: list = [
    path("", include("web_app.agents.urls")),
    path("", include("web_app.chat.urls")),
    path("", include("web_app.audit.urls")),
    path("preferences/", preferences.preferences, name="preferences"),
]
