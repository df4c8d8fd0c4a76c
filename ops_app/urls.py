from django.urls import path

from ops_app import views

urlpatterns = [
    path("api/alertmanager/<str:token>/", views.alertmanager_webhook, name="alertmanager-webhook"),
]
