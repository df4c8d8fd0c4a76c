from django.apps import AppConfig


class IncidentsAppConfig(AppConfig):
    name = "incidents_app"
    verbose_name = "Incident investigations"

    def ready(self) -> None:
        # Imported here: the hooks use models, which load after app configs.
        from incidents_app import hooks, writeback  # noqa: F401 - writeback's receivers connect on import

        hooks.connect()
