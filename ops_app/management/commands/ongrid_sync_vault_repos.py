"""Pull the vault's Git repositories now (docs/knowledge.md, "Git sync"), instead of waiting for
their interval: after fixing a token or a path, or from a deploy pipeline."""

from __future__ import annotations

from django.core.management.base import CommandError
from django.utils.translation import gettext_lazy as _

from ops_app.core.commands import LocalizedCommand
from ops_app.knowledge import git_sync
from ops_app.models import VaultRepository


class Command(LocalizedCommand):
    help = _("Sync the knowledge vault's Git repositories now (every enabled one, or those named).")

    def add_arguments(self, parser):
        parser.add_argument(
            "ids", nargs="*", type=int, help=_("Repository ids (default: every enabled one).")
        )
        parser.add_argument(
            "--due", action="store_true", help=_("Only the repositories whose interval has passed.")
        )

    def handle(self, *args, **options):
        if options["due"]:
            repositories = git_sync.due()
        elif options["ids"]:
            repositories = list(VaultRepository.objects.filter(pk__in=options["ids"]).order_by("pk"))
            if len(repositories) != len(set(options["ids"])):
                raise CommandError("no such repository id")
        else:
            repositories = list(VaultRepository.objects.filter(enabled=True).order_by("pk"))
        failed = 0
        for repo in repositories:
            report = git_sync.sync_repository(repo)
            self.stdout.write(f"{repo.organization_id}/{repo.name}: {describe(report)}")
            failed += report.get("status") == "error"
        if failed:
            raise CommandError(f"{failed} repository sync(s) failed")


def describe(report: dict) -> str:
    """One line: the commit and the counts, or the error, or that another process holds it."""
    if report.get("status") == "busy":
        return "another process is syncing it"
    if report.get("status") == "error":
        return f"FAILED: {report['error']}"
    counts = ", ".join(
        f"{report[f'{name}_count']} {name}" for name in ("indexed", "unchanged", "removed", "skipped")
    )
    return f"{report['commit'][:12]}: {counts}"
