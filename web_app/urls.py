from django.urls import include, path

from web_app import languages, preferences

urlpatterns: list = [
    path("", include("web_app.agents.urls")),
    path("", include("web_app.chat.urls")),
    path("", include("web_app.audit.urls")),
    path("preferences/", preferences.preferences, name="preferences"),
    path("i18n/setlang/", languages.switch_language, name="set_language"),
]
