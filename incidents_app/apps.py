from django.apps import AppConfig


class IncidentsAppConfig(AppConfig):
    name = "incidents_app"
    verbose_name = "Incident investigations"

    def ready(self) -> None:
        # Imported here: the hooks use models, which load after app configs.
        # writeback's and seen_before's receivers connect on import
        from incidents_app import hooks, seen_before, writeback  # noqa: F401

        hooks.connect()
