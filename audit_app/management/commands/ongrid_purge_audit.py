"""`manage.py ongrid_purge_audit`: the retention purge, by hand or from cron."""

from django.conf import settings
from django.core.management.base import CommandError
from django.utils.translation import gettext_lazy as _

from audit_app import retention
from ops_app.core.commands import LocalizedCommand


class Command(LocalizedCommand):
    help = _(
        "Delete audit data (tool calls, LLM calls, quiet session trees) older than --days "
        "(default ONGRID_AUDIT_RETENTION_DAYS), in batches. Open sessions are never touched."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--days", type=int, default=None, help=_("keep this many days (at least 1)"))
        parser.add_argument("--batch-size", type=int, default=retention.DEFAULT_BATCH)

    def handle(self, *args, days=None, batch_size=retention.DEFAULT_BATCH, **options) -> None:
        days = settings.CONFIG.audit_retention_days if days is None else days
        if days < 1:
            raise CommandError(
                "No retention configured: pass --days N (N >= 1) or set ONGRID_AUDIT_RETENTION_DAYS."
            )
        if batch_size < 1:
            raise CommandError("--batch-size must be at least 1.")
        self.stdout.write(str(retention.purge(days, batch_size)))
