"""The handlers of the Kubernetes read tools (docs/kubernetes.md): get, describe, events, logs,
rollout history and top, on the organization's cluster, shaped for a model.

Each call connects to the cluster the organization chose (`cluster`, default its default one),
stays inside the namespaces that cluster allows, and never reads a Secret.
"""

from __future__ import annotations

import datetime as dt

from django.utils import timezone
from lightkube.core.exceptions import ApiError
from lightkube.resources import apps_v1, core_v1

from agents_app.toolsets.backends import time_argument
from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.kubernetes import access, describe, history, logs, selectors, shaping, usage
from agents_app.toolsets.kubernetes.kinds import Kind, kind_of
from agents_app.toolsets.kubernetes.manifest import DEFAULT_ROWS, DEFAULT_TAIL, MAX_ROWS, MAX_TAIL

DESCRIBE_EVENTS = 15
# Owners whose own owner the describe looks up (a pod's ReplicaSet → its Deployment).
CHAINED_OWNERS = {"ReplicaSet": apps_v1.ReplicaSet}


def _limit(value: int | None, default: int, most: int) -> int:
    return min(max(int(value or default), 1), most)


async def _list(client, kind: Kind, where: list[str], limit: int, **selection) -> tuple[list[dict], bool]:
    """Up to `limit` objects across the namespaces `where` (one call each), and whether more exist."""
    found: list[dict] = []
    for namespace in where if kind.namespaced else [None]:
        scope = {"namespace": namespace} if kind.namespaced else {}
        async for obj in client.list(kind.resource, chunk_size=limit + 1, **scope, **selection):
            found.append(obj.to_dict())
            if len(found) > limit:
                return found[:limit], True
    return found, False


async def k8s_get(
    ctx: ToolContext,
    kind: str = "pod",
    namespace: str | None = None,
    name: str | None = None,
    label_selector: str | None = None,
    field_selector: str | None = None,
    limit: int | None = None,
    cluster: str | None = None,
) -> dict:
    """One object, or a list of them, as compact rows."""
    chosen = kind_of(kind)
    target = await access.cluster_of(ctx, cluster)
    if target is None:
        return access.not_configured()
    limit = _limit(limit, DEFAULT_ROWS, MAX_ROWS)
    selection = {
        "labels": selectors.parse(label_selector),
        "fields": selectors.parse(field_selector, fields=True),
    }
    objects, truncated = await _fetch(target, chosen, name, namespace, limit, selection)
    rows = [shaping.row(chosen.name, obj) for obj in objects]
    if chosen.name == "Event":
        rows = shaping.sort_events(rows)
    answer = {"cluster": target.name, "kind": chosen.name, "namespace": access.label(namespace)}
    answer.update(rows=rows, count=len(rows))
    if truncated:
        answer["truncated"] = f"more than {limit} objects; narrow with a namespace or a selector"
    return answer


async def _fetch(target, kind: Kind, name, namespace, limit: int, selection: dict) -> tuple[list[dict], bool]:
    """The object `name`, or up to `limit` objects of a list, and whether the list was cut."""
    where = access.namespaces(target, namespace) if kind.namespaced else []
    async with access.api(target) as client:
        if name:
            return [await _get(client, kind, name, namespace, target)], False
        return await _list(client, kind, where, limit, **selection)


async def _get(client, kind: Kind, name: str, namespace: str | None, target) -> dict:
    if not kind.namespaced:
        return (await client.get(kind.resource, name)).to_dict()
    if not namespace:
        raise ToolError(f"{kind.name} is namespaced: give the namespace of {name!r}")
    access.check_namespace(target, namespace)
    return (await client.get(kind.resource, name, namespace=namespace)).to_dict()


async def _events_of(
    client, where: list[str], kind: str | None = None, name: str | None = None
) -> list[dict]:
    """The events of the namespaces `where`, of one object when kind + name are given."""
    fields = [("involvedObject.name", name), ("involvedObject.kind", kind)] if name and kind else None
    rows = []
    for namespace in where:
        async for event in client.list(core_v1.Event, namespace=namespace, fields=fields):
            row = shaping.event_row(event.to_dict())
            if fields is None or row["object"] == f"{kind}/{name}":
                rows.append(row)
    return shaping.sort_events(rows)


async def _owners(client, obj: dict, namespace: str | None) -> list[str]:
    """The owner chain: a pod's ReplicaSet, then that ReplicaSet's Deployment."""
    chain, current = [], obj
    for _ in range(3):
        refs = [r for r in shaping.meta(current).get("ownerReferences") or [] if r.get("controller", True)]
        if not refs:
            break
        owner = refs[0]
        chain.append(f"{owner.get('kind')}/{owner.get('name')}")
        resource = CHAINED_OWNERS.get(owner.get("kind"))
        if resource is None or not namespace:
            break
        try:
            current = (await client.get(resource, owner.get("name"), namespace=namespace)).to_dict()
        except ApiError:  # gone, or not readable with this token: the chain stops here
            break
    return chain


async def k8s_describe(
    ctx: ToolContext, kind: str, name: str, namespace: str | None = None, cluster: str | None = None
) -> dict:
    """One object condensed, its owner chain and its recent events."""
    chosen = kind_of(kind)
    target = await access.cluster_of(ctx, cluster)
    if target is None:
        return access.not_configured()
    async with access.api(target) as client:
        obj = await _get(client, chosen, name, namespace, target)
        owners = await _owners(client, obj, namespace)
        events, unreadable = await _object_events(client, target, chosen, name, namespace)
    shown = [{k: e[k] for k in ("type", "reason", "message", "count", "last_seen")} for e in events]
    answer = {
        "cluster": target.name,
        "kind": chosen.name,
        "name": name,
        "namespace": namespace if chosen.namespaced else None,
        "summary": describe.summary(chosen.name, obj),
        "owners": owners,
        "events": shown[:DESCRIBE_EVENTS],
    }
    if unreadable:
        answer["events_unavailable"] = unreadable
    return answer


async def _object_events(
    client, target, kind: Kind, name: str, namespace: str | None
) -> tuple[list[dict], str]:
    """The object's events, or none and why: a token that may read the object but not the
    events (a narrow Role) still gets the describe."""
    if kind.name == "Event":
        return [], ""
    # A cluster-scoped object's events (a node's) are kept in `default`.
    where = [namespace] if kind.namespaced else [n for n in ["default"] if target.allows(n)]
    try:
        return await _events_of(client, where, kind.name, name), ""
    except ApiError as error:
        return [], str(access.api_error(target, error))


async def k8s_events(
    ctx: ToolContext,
    namespace: str | None = None,
    kind: str | None = None,
    name: str | None = None,
    since: str | None = None,
    warnings_only: bool = False,
    limit: int | None = None,
    cluster: str | None = None,
) -> dict:
    """Events of a namespace or one object, warnings first, inside the window."""
    chosen = kind_of(kind) if kind else None
    if name and chosen is None:
        raise ToolError("give the kind of the object with its name (e.g. kind=pod)")
    now = timezone.now()
    start = time_argument(since, "since", now - dt.timedelta(hours=1), now=now)
    target = await access.cluster_of(ctx, cluster)
    if target is None:
        return access.not_configured()
    where = access.namespaces(target, namespace)
    async with access.api(target) as client:
        rows = await _events_of(client, where, chosen.name if chosen and name else None, name)
    rows = _kept(rows, start, warnings_only, chosen.name if chosen else None)
    limit = _limit(limit, DEFAULT_ROWS, MAX_ROWS)
    answer = {"cluster": target.name, "namespace": access.label(namespace), "since": since or "now-1h"}
    answer["events"] = rows[:limit]
    if len(rows) > limit:
        answer["truncated"] = f"{len(rows)} events, showing {limit}"
    return answer


def _kept(rows: list[dict], start: dt.datetime, warnings_only: bool, kind: str | None) -> list[dict]:
    """The events last seen since `start`, of `kind` objects only when one is given."""
    rows = [r for r in rows if not r["last_seen"] or time_argument(r["last_seen"], "last_seen") >= start]
    if kind:
        rows = [r for r in rows if r["object"].startswith(f"{kind}/")]
    return [r for r in rows if r["type"] == "Warning"] if warnings_only else rows


async def k8s_logs(
    ctx: ToolContext,
    pod: str,
    namespace: str,
    container: str | None = None,
    previous: bool = False,
    tail_lines: int | None = None,
    since: str | None = None,
    cluster: str | None = None,
) -> dict:
    """The last lines of one container's log (of its previous instance with `previous`)."""
    now = timezone.now()
    start = time_argument(since, "since", None, now=now)
    target = await access.cluster_of(ctx, cluster)
    if target is None:
        return access.not_configured()
    access.check_namespace(target, namespace)
    tail = _limit(tail_lines, DEFAULT_TAIL, MAX_TAIL)
    async with access.api(target) as client:
        found = (await client.get(core_v1.Pod, pod, namespace=namespace)).to_dict()
        chosen = logs.container_of(found, container, previous)
        seconds = max(int((now - start).total_seconds()), 1) if start else None
        text = await logs.read(client, pod, namespace, chosen, previous=previous, tail=tail, since=seconds)
    answer = {"cluster": target.name, "namespace": namespace, "pod": pod, "container": chosen}
    answer["previous"] = bool(previous)
    answer.update(logs.cut(text))
    return answer


async def k8s_rollout_history(
    ctx: ToolContext, deployment: str, namespace: str, cluster: str | None = None
) -> dict:
    """The deployment's revisions, newest first, with what changed in each."""
    target = await access.cluster_of(ctx, cluster)
    if target is None:
        return access.not_configured()
    access.check_namespace(target, namespace)
    async with access.api(target) as client:
        found = (await client.get(apps_v1.Deployment, deployment, namespace=namespace)).to_dict()
        match = ((found.get("spec") or {}).get("selector") or {}).get("matchLabels") or None
        labels = list(match.items()) if match else None
        replicasets = [
            rs.to_dict() async for rs in client.list(apps_v1.ReplicaSet, namespace=namespace, labels=labels)
        ]
    return {
        "cluster": target.name,
        "deployment": deployment,
        "namespace": namespace,
        "current_revision": history.revision_of(found),
        "revisions": history.revisions(found, replicasets),
    }


async def k8s_top(
    ctx: ToolContext,
    kind: str,
    namespace: str | None = None,
    label_selector: str | None = None,
    cluster: str | None = None,
) -> dict:
    """CPU and memory in use now, from metrics.k8s.io."""
    if kind not in ("pod", "node"):
        raise ToolError("kind must be 'pod' or 'node'")
    labels = selectors.parse(label_selector)
    target = await access.cluster_of(ctx, cluster)
    if target is None:
        return access.not_configured()
    where = access.namespaces(target, namespace)
    async with access.api(target) as client:
        if kind == "node":
            rows = await usage.nodes(client, target, labels)
        else:
            rows = await usage.pods(client, target, where, labels)
    if isinstance(rows, dict):
        return rows
    answer = {"cluster": target.name, "kind": kind}
    if kind == "pod":
        answer["namespace"] = access.label(namespace)
    answer["rows"] = rows
    return answer
