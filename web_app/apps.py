from django.apps import AppConfig


class WebAppConfig(AppConfig):
    """The surfaces people use: chat pages and sockets, audit pages, the HTTP API, the CLI chat.

    The top layer of the house (docs/architecture.md): it may import every app below it, and
    nothing below imports it.
    """

    name = "web_app"
    verbose_name = "Web"
