from django.apps import AppConfig


class OpsAppConfig(AppConfig):
    name = "ops_app"
    verbose_name = "Estate and tenancy"

    def ready(self) -> None:
        from django.db.models.signals import post_migrate

        from ops_app import roles

        post_migrate.connect(roles.sync_role_permissions, dispatch_uid="ongrid-sync-roles")

        from ops_app import change_events

        change_events.connect()

        from ops_app import log_masking

        log_masking.install()
