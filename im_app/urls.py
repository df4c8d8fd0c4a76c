from django.urls import path

from im_app import views

urlpatterns = [
    path("im/telegram/<int:app_id>/<str:path>", views.telegram_webhook, name="im-telegram-webhook"),
    path("im/slack/<int:app_id>/events", views.slack_events, name="im-slack-events"),
    path("im/slack/<int:app_id>/interactions", views.slack_interactions, name="im-slack-interactions"),
    path("im/slack/<int:app_id>/commands", views.slack_commands, name="im-slack-commands"),
    path("im/feishu/<int:app_id>/events", views.feishu_events, name="im-feishu-events"),
    path("im/link/<str:code>/", views.link_account, name="im-link"),
]
