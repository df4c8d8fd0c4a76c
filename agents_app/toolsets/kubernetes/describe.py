"""`kubectl describe`, condensed: the spec and status fields an SRE reads, per kind.

Each summary takes the API's dict of the object. Kinds without a summary of their own get their
compact row plus labels and conditions.
"""

from __future__ import annotations

from agents_app.toolsets.kubernetes import podspec, shaping

CONFIG_VALUE_CHARS = 500


def conditions(obj: dict) -> list[dict]:
    """Conditions as type/status/reason/message (the fields that explain a False)."""
    shown = []
    for condition in (obj.get("status") or {}).get("conditions") or []:
        item = {"type": condition.get("type"), "status": condition.get("status")}
        for key in ("reason", "message"):
            if condition.get(key):
                item[key] = condition[key]
        shown.append(item)
    return shown


def _state(state: dict | None) -> dict:
    """A container state: which one, and the reason, exit code and times it carries."""
    for name, detail in (state or {}).items():
        shown = {"state": name}
        for key, word in (
            ("reason", "reason"),
            ("exitCode", "exit_code"),
            ("message", "message"),
            ("startedAt", "started_at"),
            ("finishedAt", "finished_at"),
        ):
            if (detail or {}).get(key) not in (None, ""):
                shown[word] = detail[key]
        return shown
    return {}


def pod_summary(pod: dict) -> dict:
    """What each container is told to be beside what it is, and why it last stopped."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    running = {c.get("name"): c for c in status.get("containerStatuses") or []}
    containers = []
    for container in spec.get("containers") or []:
        shown = podspec.container_spec(container)
        current = running.get(container.get("name")) or {}
        shown.update(
            ready=bool(current.get("ready")),
            restarts=int(current.get("restartCount") or 0),
            state=_state(current.get("state")),
        )
        last = _state(current.get("lastState"))
        if last:
            shown["last_state"] = last
        containers.append(shown)
    return {
        "status": shaping.pod_status(pod),
        "phase": status.get("phase"),
        "node": spec.get("nodeName"),
        "pod_ip": status.get("podIP"),
        "start_time": status.get("startTime"),
        "service_account": spec.get("serviceAccountName"),
        "containers": containers,
        "volumes": podspec.volume_refs(spec),
        "conditions": conditions(pod),
    }


def deployment_summary(deployment: dict) -> dict:
    """Replica counts, the rollout strategy and conditions, and the template the pods get."""
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    template = (spec.get("template") or {}).get("spec") or {}
    strategy = spec.get("strategy") or {}
    rolling = strategy.get("rollingUpdate") or {}
    shown_strategy = strategy.get("type", "RollingUpdate")
    if rolling:
        shown_strategy += (
            f" (max surge {rolling.get('maxSurge')}, max unavailable {rolling.get('maxUnavailable')})"
        )
    return {
        "replicas": {
            "desired": spec.get("replicas", 1),
            "updated": status.get("updatedReplicas") or 0,
            "ready": status.get("readyReplicas") or 0,
            "available": status.get("availableReplicas") or 0,
            "unavailable": status.get("unavailableReplicas") or 0,
        },
        "revision": (shaping.meta(deployment).get("annotations") or {}).get(shaping.REVISION, ""),
        "strategy": shown_strategy,
        "selector": (spec.get("selector") or {}).get("matchLabels") or {},
        "progress_deadline_seconds": spec.get("progressDeadlineSeconds"),
        "paused": bool(spec.get("paused")),
        "containers": [podspec.container_spec(c) for c in template.get("containers") or []],
        "volumes": podspec.volume_refs(template),
        "conditions": conditions(deployment),
    }


def node_summary(node: dict) -> dict:
    """Conditions, taints and room: why pods would not schedule or were evicted."""
    spec, status = node.get("spec") or {}, node.get("status") or {}
    info = status.get("nodeInfo") or {}
    taints = [
        f"{t.get('key')}{'=' + t['value'] if t.get('value') else ''}:{t.get('effect')}"
        for t in spec.get("taints") or []
    ]
    return {
        "status": shaping.node_status(node),
        "roles": shaping.node_row(node)["roles"],
        "kubelet_version": info.get("kubeletVersion"),
        "os_image": info.get("osImage"),
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": taints,
        "capacity": status.get("capacity") or {},
        "allocatable": status.get("allocatable") or {},
        "conditions": conditions(node),
    }


def configmap_summary(configmap: dict) -> dict:
    """Its data (cut) and each writer from managedFields: who changed it and when."""
    data = {}
    for key, value in sorted((configmap.get("data") or {}).items()):
        value = str(value)
        cut = len(value) > CONFIG_VALUE_CHARS
        data[key] = value[:CONFIG_VALUE_CHARS] + (f"… [cut: {len(value)} characters]" if cut else "")
    managers = [
        {"manager": e.get("manager"), "operation": e.get("operation"), "time": e.get("time")}
        for e in shaping.meta(configmap).get("managedFields") or []
    ]
    return {
        "data": data,
        "binary_keys": sorted(configmap.get("binaryData") or {}),
        "last_changed_by": shaping.last_change(configmap),
        "managers": managers,
    }


def generic_summary(kind: str, obj: dict) -> dict:
    """Kinds without a summary of their own: their row, labels and conditions."""
    shown = shaping.row(kind, obj)
    shown.pop("name", None)
    shown.pop("namespace", None)
    shown["labels"] = shaping.meta(obj).get("labels") or {}
    found = conditions(obj)
    if found:
        shown["conditions"] = found
    return shown


SUMMARIES = {
    "Pod": pod_summary,
    "Deployment": deployment_summary,
    "Node": node_summary,
    "ConfigMap": configmap_summary,
}


def summary(kind: str, obj: dict) -> dict:
    """The condensed describe of one object of `kind`."""
    if kind in SUMMARIES:
        return SUMMARIES[kind](obj)
    return generic_summary(kind, obj)
