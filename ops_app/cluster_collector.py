"""The cluster change collector (docs/kubernetes.md): every organization's clusters read
(ops_app.integrations.kubernetes_changes) and what is new recorded as change events
(ops_app.estate.cluster_changes). It composes the two here because they may not import each other.

With Redis, celery beat runs `ops_app.collect_cluster_changes` every ONGRID_K8S_CHANGES_INTERVAL
seconds; without it (the embedded shape) `collector_loop` runs on the server's event loop, started
with the first request like the schedules' loop. Polls at once are harmless: each cluster's poll
holds its state row locked, so a change is recorded once.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from django.conf import settings
from lightkube.core.exceptions import ApiError

from ops_app.core import kubeconfig, loops, outbound
from ops_app.estate import cluster_changes
from ops_app.integrations import kubernetes, kubernetes_changes
from ops_app.models import DataSource

log = logging.getLogger(__name__)


def collect_all() -> int:
    """Every cluster of every organization, one after the other; the events recorded."""
    sources = DataSource.objects.filter(kind=DataSource.Kind.KUBERNETES).order_by("organization_id", "pk")
    return sum(collect_from(source) for source in sources)


def collect_from(source: DataSource) -> int:
    """One cluster: read it, record what is new; the events recorded (0 when it could not be read)."""
    return collect_now(source)[0]


def collect_now(source: DataSource) -> tuple[int, str]:
    """(events recorded, why the cluster could not be read or ""). A cluster that is down or
    refuses the token is logged once per outage (the reason in a few words, never the token or the
    remote answer) and skipped, so the organization's other clusters, and other organizations',
    are still polled."""
    try:
        seen = async_to_sync(kubernetes_changes.read_cluster)(kubernetes.cluster_of(source))
    except Exception as error:  # noqa: BLE001 - one broken cluster must not stop the others
        reason = failure(error)
        if cluster_changes.note_reachable(source, reason):
            log.warning(
                "cluster %s (organization %s): changes not collected: %s",
                source.name,
                source.organization_id,
                reason,
            )
        return 0, reason
    if cluster_changes.note_reachable(source):
        log.info("cluster %s (organization %s): reachable again", source.name, source.organization_id)
    return len(cluster_changes.record_cluster_state(source, seen)), ""


def failure(error: BaseException) -> str:
    """A few words on why a cluster could not be read: the HTTP status, the kind of network
    failure, a bad kubeconfig; nothing the server answered."""
    if isinstance(error, ApiError):
        return outbound.status_reason(error.status.code or 0)
    if isinstance(error, kubeconfig.KubeconfigError):
        return str(error)
    return outbound.failure_reason(error)


def should_run_embedded() -> bool:
    """Only without Celery (in the scale-out shape beat runs the task), and unless turned off."""
    return settings.ONGRID_EXECUTOR == "inline" and settings.CONFIG.k8s_changes_interval > 0


async def collector_loop() -> None:
    """Collect for ever on this process (a cluster that times out holds only its worker thread)."""
    await loops.repeat("cluster change collection", collect_all, lambda: settings.CONFIG.k8s_changes_interval)
