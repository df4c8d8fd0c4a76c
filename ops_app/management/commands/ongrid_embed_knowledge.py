"""Embed the knowledge now, in this process, instead of waiting for the background run (after
turning semantic search on for a large vault, or to see an endpoint's failure at once)."""

from __future__ import annotations

from django.core.management.base import CommandError
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ops_app.core.commands import LocalizedCommand
from ops_app.knowledge import background, embeddings
from ops_app.models import LLMEndpoint, Organization


class Command(LocalizedCommand):
    help = _("Embed the passages whose vector is missing or stale, for one organization or all.")

    def add_arguments(self, parser):
        parser.add_argument(
            "--organization", help=_("The organization's slug (default: every organization).")
        )

    def handle(self, *args, **options):
        organizations = Organization.objects.order_by("pk")
        if options.get("organization"):
            organizations = organizations.filter(slug=options["organization"])
            if not organizations.exists():
                raise CommandError(gettext("No organization with that slug."))
        failed = False
        for organization in organizations:
            embedder = embeddings.embedder_for(organization.pk)
            if embedder is None:
                continue
            count = background.embed_pending(organization.pk)
            done, total = background.progress(organization.pk, embedder.model)
            error = LLMEndpoint.objects.get(pk=embedder.endpoint.pk).embedding_error
            values = {"org": organization.slug, "count": count, "done": done, "total": total, "error": error}
            if error:
                failed = True
                self.stderr.write(gettext("%(org)s: %(count)s embedded, stopped: %(error)s") % values)
            else:
                self.stdout.write(
                    gettext("%(org)s: %(count)s embedded (%(done)s of %(total)s passages embedded)") % values
                )
        if failed:
            raise CommandError(gettext("Some organizations' knowledge could not be embedded."))
