from django.urls import path

from ops_app import api, views

urlpatterns: list = [
    path("api/alertmanager/", views.alertmanager_webhook, name="alertmanager-webhook-bearer"),
    path("api/alertmanager/<str:token>/", views.alertmanager_webhook, name="alertmanager-webhook"),
    path("api/knowledge/", api.KnowledgeView.as_view(), name="api-knowledge"),
]
