from django.apps import AppConfig


class ImAppConfig(AppConfig):
    """The IM bridges: Slack, Telegram and Feishu as chat surfaces, one package each under
    `im_app/platforms/` (docs/im.md). An IM app (`IMApp`) is one bot on one platform.

    A surface, like web_app: it sits in the top layer beside it and imports only the layers below.
    """

    name = "im_app"
    verbose_name = "Chat apps (Slack, Telegram, Feishu)"

    def ready(self) -> None:
        # Imported here: these modules use models, which load after app configs.
        from agents_app.api import register_thread_language
        from chat_app.channels import register_channels
        from im_app import (
            alert_cards,  # noqa: F401 - connects the alert cards' receivers
            summaries,  # noqa: F401 - connects the investigation summaries receiver
        )
        from im_app.languages import athread_language
        from im_app.models import Platform

        register_thread_language(athread_language)
        # A session started from a platform stores its value as its channel; the session store
        # below knows only its own channels, so the platforms' labels are given to it here.
        register_channels(Platform.choices)
