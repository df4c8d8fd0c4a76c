from django.urls import path

from ops_app import api, views
from ops_app.alert_sources import views as alert_views

urlpatterns: list = [
    path("api/alertmanager/", views.alertmanager_webhook, name="alertmanager-webhook-bearer"),
    path("api/alertmanager/<str:token>/", views.alertmanager_webhook, name="alertmanager-webhook"),
    path("api/alerts/<str:kind>/<str:url_key>/", alert_views.receive, name="alert-source-webhook"),
    path("api/knowledge/", api.KnowledgeView.as_view(), name="api-knowledge"),
]
