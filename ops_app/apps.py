from django.apps import AppConfig


class OpsAppConfig(AppConfig):
    name = "ops_app"
    verbose_name = "Estate and tenancy"

    def ready(self) -> None:
        # Imported here, not at the top: these modules use models, which load after app configs.
        from django.db.models.signals import post_delete, post_migrate, post_save

        from ops_app.core import log_masking
        from ops_app.estate import change_events, devices
        from ops_app.knowledge import background, fulltext, git_sync
        from ops_app.tenancy import roles

        post_migrate.connect(roles.sync_role_permissions, dispatch_uid="ongrid-sync-roles")
        # A SQLite table rebuild (any later migration adding a column) drops the FTS5 triggers.
        post_migrate.connect(fulltext.ensure_index_after_migrate, sender=self, dispatch_uid="ongrid-fts")
        post_save.connect(
            background.endpoint_saved, sender="ops_app.LLMEndpoint", dispatch_uid="ongrid-embed"
        )
        change_events.connect()
        devices.connect()
        post_delete.connect(
            git_sync.forget_local_copy,
            sender="ops_app.VaultRepository",
            dispatch_uid="ongrid-vault-repo-copy",
        )
        log_masking.install()
        self._start_tracing()

    def _start_tracing(self) -> None:
        """OpenTelemetry, only when an OTLP endpoint is configured (docs/observability.md)."""
        from django.conf import settings

        from ops_app.core import tracing

        tracing.configure(settings.CONFIG)
