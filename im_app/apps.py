from django.apps import AppConfig


class ImAppConfig(AppConfig):
    """The IM bridges: Slack, Telegram and Feishu as chat surfaces (docs/im.md).

    A surface, like web_app: it sits in the top layer beside it and imports only the layers below.
    """

    name = "im_app"
    verbose_name = "Chat apps (Slack, Telegram, Feishu)"

    def ready(self) -> None:
        from im_app import summaries  # noqa: F401 - connects the investigation summaries receiver
