from django.urls import path

from agents_app.metrics import metrics_view

urlpatterns: list = [
    path("metrics", metrics_view, name="metrics"),
]
