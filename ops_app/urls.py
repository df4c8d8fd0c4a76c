from django.urls import path

from ops_app import api

urlpatterns: list = [
    path("api/knowledge/", api.KnowledgeView.as_view(), name="api-knowledge"),
]
