"""Poll the clusters for rollouts and ConfigMap changes now, instead of waiting for the next
round of the periodic collector (docs/kubernetes.md)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from ops_app import cluster_collector
from ops_app.core.commands import LocalizedCommand


class Command(LocalizedCommand):
    help = _("Collect the change events of every organization's Kubernetes clusters now.")

    def handle(self, *args, **options):
        recorded = cluster_collector.collect_all()
        self.stdout.write(f"{recorded} change event(s) recorded.")
