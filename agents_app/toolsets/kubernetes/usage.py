"""`kubectl top`: usage from metrics.k8s.io beside the pods' limits and the nodes' allocatable.

metrics.k8s.io is served by metrics-server, an add-on: a cluster without it answers 404 on the
group, which is reported as "unavailable" (a fact about the cluster, not an error to retry).
"""

from __future__ import annotations

from decimal import Decimal

from lightkube import AsyncClient
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import create_global_resource, create_namespaced_resource
from lightkube.resources import core_v1
from lightkube.utils.quantity import parse_quantity

from ops_app.integrations.kubernetes import Cluster

# `global_list`: an unrestricted cluster's pods are read across namespaces in one call.
PodMetrics = create_namespaced_resource(
    "metrics.k8s.io", "v1beta1", "PodMetrics", "pods", verbs=["get", "list", "global_list"]
)
NodeMetrics = create_global_resource(
    "metrics.k8s.io", "v1beta1", "NodeMetrics", "nodes", verbs=["get", "list"]
)
MIB = Decimal(1024 * 1024)


ELSEWHERE = "use k8s_describe for requests and limits, or Prometheus if the cluster exports to it."


def unavailable(cluster: Cluster, code: int = 404) -> dict:
    """A fact about the cluster, not a failure: the model should not retry, but look elsewhere.
    404: the group is not served at all; 503: metrics-server is registered but not answering."""
    if code == 503:
        why = (
            f"metrics-server on cluster {cluster.name} is registered but not answering "
            "(metrics.k8s.io: HTTP 503)"
        )
    else:
        why = f"metrics-server is not installed on cluster {cluster.name} (metrics.k8s.io is not served)"
    return {
        "status": "unavailable",
        "message": f"{why}, so current CPU and memory cannot be read; {ELSEWHERE}",
    }


def cpu(value: Decimal | None) -> str:
    return "" if value is None else f"{int(value * 1000)}m"


def memory(value: Decimal | None) -> str:
    return "" if value is None else f"{int(value / MIB)}Mi"


def _sum(quantities: list[str | None]) -> Decimal | None:
    parsed = [parse_quantity(q) for q in quantities if q]
    return sum(parsed, Decimal(0)) if parsed else None


async def _metrics(client: AsyncClient, resource, **where) -> list[dict] | int:
    """The metrics objects, or the status code when the group is not served (404) or its
    server is down (503)."""
    try:
        return [
            m.to_dict() if hasattr(m, "to_dict") else dict(m) async for m in client.list(resource, **where)
        ]
    except ApiError as error:
        code = error.status.code or error.response.status_code
        if code in (404, 503):
            return code
        raise


async def pods(client: AsyncClient, cluster: Cluster, where: list[str], labels) -> list[dict] | dict:
    """Pod usage of the namespaces `where`, busiest first, beside each pod's summed limits."""
    rows = []
    for namespace in where:
        found = await _metrics(client, PodMetrics, namespace=namespace, labels=labels)
        if isinstance(found, int):
            return unavailable(cluster, found)
        limits = {}
        async for pod in client.list(core_v1.Pod, namespace=namespace, labels=labels):
            limits[(pod.metadata.namespace, pod.metadata.name)] = pod.to_dict()
        rows += [_pod_row(item, limits) for item in found]
    rows.sort(key=lambda r: r.pop("cpu_cores"), reverse=True)
    return rows


def _pod_row(item: dict, pods_by_name: dict) -> dict:
    metadata = item.get("metadata") or {}
    containers = item.get("containers") or []
    used_cpu = _sum([(c.get("usage") or {}).get("cpu") for c in containers])
    used_memory = _sum([(c.get("usage") or {}).get("memory") for c in containers])
    spec = ((pods_by_name.get((metadata.get("namespace"), metadata.get("name"))) or {}).get("spec")) or {}
    limits = [((c.get("resources") or {}).get("limits") or {}) for c in spec.get("containers") or []]
    return {
        "name": metadata.get("name"),
        "namespace": metadata.get("namespace"),
        "cpu": cpu(used_cpu),
        "memory": memory(used_memory),
        "cpu_limit": cpu(_sum([lim.get("cpu") for lim in limits])) or "none",
        "memory_limit": memory(_sum([lim.get("memory") for lim in limits])) or "none",
        "cpu_cores": float(used_cpu or 0),
    }


async def nodes(client: AsyncClient, cluster: Cluster, labels) -> list[dict] | dict:
    """Node usage as a share of what each node can give pods (allocatable, not capacity)."""
    found = await _metrics(client, NodeMetrics, labels=labels)
    if isinstance(found, int):
        return unavailable(cluster, found)
    allocatable = {}
    async for node in client.list(core_v1.Node, labels=labels):
        allocatable[node.metadata.name] = (node.to_dict().get("status") or {}).get("allocatable") or {}
    rows = []
    for item in found:
        name = (item.get("metadata") or {}).get("name")
        used = item.get("usage") or {}
        used_cpu, used_memory = parse_quantity(used.get("cpu")), parse_quantity(used.get("memory"))
        room = allocatable.get(name) or {}
        rows.append(
            {
                "name": name,
                "cpu": cpu(used_cpu),
                "memory": memory(used_memory),
                "cpu_percent": _percent(used_cpu, room.get("cpu")),
                "memory_percent": _percent(used_memory, room.get("memory")),
            }
        )
    return rows


def _percent(used: Decimal | None, total: str | None) -> int | None:
    whole = parse_quantity(total) if total else None
    if used is None or not whole:
        return None
    return int(used * 100 / whole)
