"""Objects as the rows `kubectl get -o wide` shows: the few fields an SRE reads, not whole objects.

Every function takes the object as the API's own dict (`obj.to_dict()`, camelCase keys), so a
field the server left out is simply absent, never an exception.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from ops_app.core.timeutil import parse_time

REVISION = "deployment.kubernetes.io/revision"
ROLE_PREFIX = "node-role.kubernetes.io/"
PRESSURES = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")


def age(stamp: str | None, now: dt.datetime | None = None) -> str:
    """kubectl's AGE: "40s", "12m", "3h", "5d"."""
    if not stamp:
        return ""
    seconds = int(((now or dt.datetime.now(dt.UTC)) - parse_time(stamp)).total_seconds())
    for unit, size, below in (("s", 1, 120), ("m", 60, 120 * 60), ("h", 3600, 48 * 3600)):
        if seconds < below:
            return f"{max(seconds, 0) // size}{unit}"
    return f"{seconds // 86400}d"


def meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def base(obj: dict) -> dict:
    """name, namespace (for namespaced objects) and age."""
    metadata = meta(obj)
    row = {"name": metadata.get("name")}
    if metadata.get("namespace"):
        row["namespace"] = metadata["namespace"]
    row["age"] = age(metadata.get("creationTimestamp"))
    return row


def images(template_spec: dict) -> list[str]:
    return [c.get("image", "") for c in template_spec.get("containers") or []]


# --- pods -----------------------------------------------------------------------------------------


def pod_status(pod: dict) -> str:
    """kubectl's STATUS column: the waiting/terminated reason of a container wins over the phase."""
    if meta(pod).get("deletionTimestamp"):
        return "Terminating"
    status = pod.get("status") or {}
    reason = status.get("reason") or status.get("phase") or "Unknown"
    for init in status.get("initContainerStatuses") or []:
        state = init.get("state") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated") or {}
        if waiting.get("reason") and waiting["reason"] != "PodInitializing":
            return f"Init:{waiting['reason']}"
        if terminated and terminated.get("exitCode"):
            return f"Init:{terminated.get('reason') or 'Error'}"
    for container in reversed(status.get("containerStatuses") or []):
        state = container.get("state") or {}
        waiting, terminated = state.get("waiting") or {}, state.get("terminated") or {}
        if waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated.get("reason"):
            reason = terminated["reason"]
        elif terminated:
            reason = f"ExitCode:{terminated.get('exitCode')}"
    return reason


def last_termination(pod: dict) -> str:
    """Why each restarted container last stopped: "OOMKilled (exit 137)" (named when several)."""
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    parts = []
    for container in statuses:
        terminated = (container.get("lastState") or {}).get("terminated")
        if not terminated:
            continue
        words = f"{terminated.get('reason') or 'Terminated'} (exit {terminated.get('exitCode')})"
        parts.append(words if len(statuses) == 1 else f"{container.get('name')}: {words}")
    return "; ".join(parts)


def pod_row(pod: dict) -> dict:
    """kubectl get pods -o wide: status, ready, restarts, node, and why it last stopped."""
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    containers = (pod.get("spec") or {}).get("containers") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    row = base(pod)
    row.update(
        status=pod_status(pod),
        ready=f"{ready}/{len(containers) or len(statuses)}",
        restarts=sum(int(c.get("restartCount") or 0) for c in statuses),
        node=(pod.get("spec") or {}).get("nodeName") or "",
    )
    reason = last_termination(pod)
    if reason:
        row["reason"] = reason
    return row


# --- workloads ------------------------------------------------------------------------------------


def deployment_row(deployment: dict) -> dict:
    """kubectl get deploy, plus the images and revision a rollout question starts from."""
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    row = base(deployment)
    row.update(
        ready=f"{status.get('readyReplicas') or 0}/{spec.get('replicas', 1)}",
        up_to_date=status.get("updatedReplicas") or 0,
        available=status.get("availableReplicas") or 0,
        images=images(((spec.get("template") or {}).get("spec")) or {}),
        revision=(meta(deployment).get("annotations") or {}).get(REVISION, ""),
    )
    return row


def replicaset_row(replicaset: dict) -> dict:
    """One rollout step of a deployment: its revision, images and pods."""
    spec, status = replicaset.get("spec") or {}, replicaset.get("status") or {}
    row = base(replicaset)
    row.update(
        desired=spec.get("replicas", 0),
        ready=status.get("readyReplicas") or 0,
        images=images(((spec.get("template") or {}).get("spec")) or {}),
        revision=(meta(replicaset).get("annotations") or {}).get(REVISION, ""),
    )
    return row


def statefulset_row(statefulset: dict) -> dict:
    """kubectl get sts: ready/desired and images."""
    spec, status = statefulset.get("spec") or {}, statefulset.get("status") or {}
    row = base(statefulset)
    row.update(
        ready=f"{status.get('readyReplicas') or 0}/{spec.get('replicas', 1)}",
        images=images(((spec.get("template") or {}).get("spec")) or {}),
    )
    return row


def daemonset_row(daemonset: dict) -> dict:
    """kubectl get ds: desired, ready and available pods."""
    status = daemonset.get("status") or {}
    row = base(daemonset)
    row.update(
        desired=status.get("desiredNumberScheduled") or 0,
        ready=status.get("numberReady") or 0,
        available=status.get("numberAvailable") or 0,
    )
    return row


def job_row(job: dict) -> dict:
    """kubectl get jobs: completions and whether it completed or failed."""
    spec, status = job.get("spec") or {}, job.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    state = next((t for t in ("Complete", "Failed", "Suspended") if conditions.get(t) == "True"), "Running")
    row = base(job)
    row.update(completions=f"{status.get('succeeded') or 0}/{spec.get('completions', 1)}", status=state)
    return row


def cronjob_row(cronjob: dict) -> dict:
    """kubectl get cj: schedule, suspension and when it last ran."""
    spec, status = cronjob.get("spec") or {}, cronjob.get("status") or {}
    row = base(cronjob)
    row.update(
        schedule=spec.get("schedule", ""),
        suspend=bool(spec.get("suspend")),
        last_schedule=status.get("lastScheduleTime") or "",
    )
    return row


# --- the rest -------------------------------------------------------------------------------------


def service_row(service: dict) -> dict:
    """kubectl get svc: type, cluster IP and ports."""
    spec = service.get("spec") or {}
    ports = [f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in spec.get("ports") or []]
    row = base(service)
    row.update(type=spec.get("type", "ClusterIP"), cluster_ip=spec.get("clusterIP", ""), ports=ports)
    return row


def ingress_row(ingress: dict) -> dict:
    """kubectl get ing: hosts and ingress class."""
    spec = ingress.get("spec") or {}
    row = base(ingress)
    row.update(
        hosts=[r.get("host", "*") for r in spec.get("rules") or []],
        ingress_class=spec.get("ingressClassName", ""),
    )
    return row


def last_change(obj: dict) -> str:
    """Who last wrote the object, from its managedFields: "kubectl-edit at 2026-12-01T10:02:00Z"."""
    entries = [e for e in meta(obj).get("managedFields") or [] if e.get("manager")]
    if not entries:
        return ""
    latest = max(entries, key=lambda e: e.get("time") or "")
    return f"{latest['manager']} at {latest['time']}" if latest.get("time") else latest["manager"]


def configmap_row(configmap: dict) -> dict:
    """Keys only (describe shows values) and who last wrote it: an in-place edit is a change."""
    row = base(configmap)
    keys = sorted({*(configmap.get("data") or {}), *(configmap.get("binaryData") or {})})
    row.update(keys=keys, last_changed_by=last_change(configmap))
    return row


def hpa_targets(hpa: dict) -> list[str]:
    """Each metric as "cpu: 95%/70%" (current/target), as `kubectl get hpa` shows them."""
    current = {}
    for metric in (hpa.get("status") or {}).get("currentMetrics") or []:
        resource = metric.get("resource") or {}
        usage = resource.get("current") or {}
        if resource.get("name"):
            shown = usage.get("averageUtilization")
            current[resource["name"]] = f"{shown}%" if shown is not None else usage.get("averageValue")
    targets = []
    for metric in (hpa.get("spec") or {}).get("metrics") or []:
        resource = metric.get("resource") or {}
        goal = resource.get("target") or {}
        name = resource.get("name") or metric.get("type", "")
        wanted = goal.get("averageUtilization")
        wanted = f"{wanted}%" if wanted is not None else goal.get("averageValue") or goal.get("value")
        targets.append(f"{name}: {current.get(name, '<unknown>')}/{wanted}")
    return targets


def hpa_row(hpa: dict) -> dict:
    """kubectl get hpa: an autoscaler at `max` with targets above goal is out of room."""
    spec, status = hpa.get("spec") or {}, hpa.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    row = base(hpa)
    row.update(
        reference=f"{ref.get('kind')}/{ref.get('name')}",
        targets=hpa_targets(hpa),
        min=spec.get("minReplicas", 1),
        max=spec.get("maxReplicas"),
        replicas=status.get("currentReplicas") or 0,
    )
    return row


def pvc_row(pvc: dict) -> dict:
    """kubectl get pvc: phase, bound volume, capacity and class."""
    spec, status = pvc.get("spec") or {}, pvc.get("status") or {}
    row = base(pvc)
    row.update(
        status=status.get("phase", ""),
        volume=spec.get("volumeName", ""),
        capacity=(status.get("capacity") or {}).get("storage", ""),
        storage_class=spec.get("storageClassName", ""),
    )
    return row


def node_status(node: dict) -> str:
    """ "Ready", "NotReady,DiskPressure", "Ready,SchedulingDisabled"."""
    conditions = {c.get("type"): c.get("status") for c in (node.get("status") or {}).get("conditions") or []}
    words = ["Ready" if conditions.get("Ready") == "True" else "NotReady"]
    words += [p for p in PRESSURES if conditions.get(p) == "True"]
    if (node.get("spec") or {}).get("unschedulable"):
        words.append("SchedulingDisabled")
    return ",".join(words)


def node_row(node: dict) -> dict:
    """kubectl get nodes: readiness with pressures, roles, kubelet version."""
    labels = meta(node).get("labels") or {}
    roles = sorted(k[len(ROLE_PREFIX) :] for k in labels if k.startswith(ROLE_PREFIX))
    row = base(node)
    row.update(
        status=node_status(node),
        roles=",".join(roles) or "<none>",
        version=((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", ""),
    )
    return row


def namespace_row(namespace: dict) -> dict:
    """kubectl get ns: Active or Terminating."""
    row = base(namespace)
    row["status"] = (namespace.get("status") or {}).get("phase", "")
    return row


def event_row(event: dict) -> dict:
    """One event as k8s_events lists it."""
    involved = event.get("involvedObject") or {}
    series = event.get("series") or {}
    return {
        "type": event.get("type", ""),
        "reason": event.get("reason", ""),
        "object": f"{involved.get('kind')}/{involved.get('name')}",
        "message": (event.get("message") or "").strip(),
        "count": event.get("count") or series.get("count") or 1,
        "first_seen": event.get("firstTimestamp") or event.get("eventTime") or "",
        "last_seen": last_seen(event),
    }


def last_seen(event: dict) -> str:
    """When the event last happened: core/v1 and events.k8s.io spell it differently."""
    series = event.get("series") or {}
    return (
        event.get("lastTimestamp")
        or series.get("lastObservedTime")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or meta(event).get("creationTimestamp")
        or ""
    )


ROWS: dict[str, Callable[[dict], dict]] = {
    "Pod": pod_row,
    "Deployment": deployment_row,
    "ReplicaSet": replicaset_row,
    "StatefulSet": statefulset_row,
    "DaemonSet": daemonset_row,
    "Job": job_row,
    "CronJob": cronjob_row,
    "Service": service_row,
    "Ingress": ingress_row,
    "ConfigMap": configmap_row,
    "HorizontalPodAutoscaler": hpa_row,
    "PersistentVolumeClaim": pvc_row,
    "Node": node_row,
    "Namespace": namespace_row,
    "Event": event_row,
}


def row(kind: str, obj: dict) -> dict:
    """The compact row of one object of `kind` (a kind name of kinds.KINDS)."""
    return ROWS[kind](obj)


def sort_events(rows: list[dict]) -> list[dict]:
    """Warnings first, then newest first."""
    newest = sorted(rows, key=lambda r: r.get("last_seen") or "", reverse=True)
    return sorted(newest, key=lambda r: r.get("type") != "Warning")
