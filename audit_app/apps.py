from django.apps import AppConfig
from django.db.models.signals import post_migrate


class AuditAppConfig(AppConfig):
    name = "audit_app"
    verbose_name = "Audit"

    def ready(self) -> None:
        from audit_app.search import ensure_fulltext_after_migrate

        post_migrate.connect(ensure_fulltext_after_migrate, sender=self, dispatch_uid="audit_fulltext")
