"""The Kubernetes write tools (docs/kubernetes.md): rollout restart, rollout undo and scale, each
held by the review gate (docs/review-gate.md) and previewed there by a server-side dry run.

Each tool has three parts the toolset registry binds by name:

- `describe_<tool>(arguments)`: the change in kubectl's words, its target
  (`<cluster>/<namespace>/<kind>/<name>`) and blast radius, from the arguments alone;
- `preview_<tool>(ctx, arguments)`: the gate calls it before the reviewer is asked. It plans the
  change against the cluster as it is now and sends that patch with `dryRun=All`; the API server
  answers the object as it would be, and what differs is the diff the reviewer and the cards show.
  A refused dry run (a read-only token's 403, a 404, an invalid change) comes back as
  `ok: False` and the gate rejects the call without asking the reviewer;
- the handler, run once and only once approved: it plans again (the object may have moved while
  the change was reviewed) and sends the same kind of patch for real. An API refusal is a
  ToolError, so the proposal is stamped failed with the server's reason, never executed.

A namespace outside the cluster's allowed list is refused before any request is made.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import httpx2
from asgiref.sync import sync_to_async
from lightkube import AsyncClient
from lightkube.core.exceptions import ApiError
from lightkube.resources.apps_v1 import Deployment, ReplicaSet, StatefulSet
from lightkube.types import PatchType

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.kubernetes.access import api_error_text, cluster_for_change, opened
from ops_app.core import outbound
from ops_app.core.egress import EgressRefused
from ops_app.estate import topology
from ops_app.models import TopologyNode

RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
REVISION = "deployment.kubernetes.io/revision"
TEMPLATE_HASH = "pod-template-hash"
BLAST_RADIUS = "namespace"  # one workload's pods, inside one namespace of one cluster
MAX_DIFF_LINES = 40
MAX_DEPENDANTS = 10
# Names that must never be checked against the object store or shown as a path.
K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
# Environment variables whose literal value is masked in a diff (it may be a credential).
SECRET_NAME = re.compile(r"(PASS|SECRET|TOKEN|KEY|CREDENTIAL|AUTH)", re.IGNORECASE)
MASK = "***"


@dataclass(frozen=True)
class Plan:
    """One change, ready to send: a JSON merge patch of one object, and what it starts from."""

    resource: type
    kind: str  # deployment | statefulset: how the target and kubectl name it
    name: str
    namespace: str
    patch: dict
    before: dict  # the part of the object the change is about (`section` of it), as it is now
    section: tuple[str, ...]
    replicas: int | None
    what: str  # the change in words, for the result and the dry run's summary


Planner = Callable[[AsyncClient, dict], Awaitable[Plan]]


# --- the three tools ----------------------------------------------------------------------------


def describe_k8s_rollout_restart(arguments: dict) -> dict:
    name, namespace = _names(arguments, "deployment")
    action = f"kubectl rollout restart deployment/{name} -n {namespace}"
    return _account(arguments, action, "deployment", name)


async def preview_k8s_rollout_restart(ctx: ToolContext, arguments: dict) -> dict:
    return await _preview(ctx, arguments, _plan_restart)


async def k8s_rollout_restart(
    ctx: ToolContext, deployment: str, namespace: str, reason: str, cluster: str | None = None
) -> dict:
    arguments = {"deployment": deployment, "namespace": namespace, "cluster": cluster}
    return await _apply(ctx, arguments, _plan_restart)


def describe_k8s_rollout_undo(arguments: dict) -> dict:
    name, namespace = _names(arguments, "deployment")
    to = f" --to-revision={arguments['to_revision']}" if arguments.get("to_revision") else ""
    action = f"kubectl rollout undo deployment/{name} -n {namespace}{to}"
    return _account(arguments, action, "deployment", name)


async def preview_k8s_rollout_undo(ctx: ToolContext, arguments: dict) -> dict:
    return await _preview(ctx, arguments, _plan_undo)


async def k8s_rollout_undo(
    ctx: ToolContext,
    deployment: str,
    namespace: str,
    reason: str,
    to_revision: int | None = None,
    cluster: str | None = None,
) -> dict:
    arguments = {"deployment": deployment, "namespace": namespace, "to_revision": to_revision}
    return await _apply(ctx, {**arguments, "cluster": cluster}, _plan_undo)


def describe_k8s_scale(arguments: dict) -> dict:
    name, namespace = _names(arguments, "name")
    kind = arguments.get("kind") or "deployment"
    action = f"kubectl scale {kind}/{name} -n {namespace} --replicas={arguments.get('replicas')}"
    return _account(arguments, action, kind, name)


async def preview_k8s_scale(ctx: ToolContext, arguments: dict) -> dict:
    return await _preview(ctx, arguments, _plan_scale)


async def k8s_scale(
    ctx: ToolContext,
    name: str,
    namespace: str,
    replicas: int,
    reason: str,
    kind: str = "deployment",
    cluster: str | None = None,
) -> dict:
    arguments = {"name": name, "namespace": namespace, "replicas": replicas, "kind": kind, "cluster": cluster}
    return await _apply(ctx, arguments, _plan_scale)


# --- describing ---------------------------------------------------------------------------------


def _names(arguments: dict, key: str) -> tuple[str, str]:
    """The workload's name and namespace, refused unless they are Kubernetes names."""
    name, namespace = str(arguments.get(key) or ""), str(arguments.get("namespace") or "")
    for label, value in ((key, name), ("namespace", namespace)):
        if not K8S_NAME.match(value):
            raise ToolError(
                f"{label} must be a Kubernetes name (lower-case letters, digits, '-', '.'), not {value!r}"
            )
    return name, namespace


def _account(arguments: dict, action: str, kind: str, name: str) -> dict:
    cluster = arguments.get("cluster") or "default"
    target = target_of(cluster, arguments["namespace"], kind, name)
    return {"action": action, "target": target, "blast_radius": BLAST_RADIUS}


def target_of(cluster: str, namespace: str, kind: str, name: str) -> str:
    """How proposals name a workload: `prod/payments/deployment/payments-api`."""
    return f"{cluster}/{namespace}/{kind}/{name}"


# --- planning -----------------------------------------------------------------------------------


async def _plan_restart(api: AsyncClient, arguments: dict) -> Plan:
    """kubectl's restart: a new `restartedAt` annotation on the pod template rolls every pod."""
    name, namespace = arguments["deployment"], arguments["namespace"]
    current = (await api.get(Deployment, name, namespace=namespace)).to_dict()
    now = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    patch = {"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: now}}}}}
    return Plan(
        Deployment,
        "deployment",
        name,
        namespace,
        patch,
        current["spec"]["template"],
        ("spec", "template"),
        _replicas(current),
        f"restart every pod of deployment/{name}",
    )


async def _plan_undo(api: AsyncClient, arguments: dict) -> Plan:
    """kubectl's undo: the pod template of the ReplicaSet holding the revision (by default the one
    before the current), minus its `pod-template-hash` label, becomes the deployment's template."""
    name, namespace = arguments["deployment"], arguments["namespace"]
    current = (await api.get(Deployment, name, namespace=namespace)).to_dict()
    revisions = await _revisions(api, current)
    now = _revision_of(current)
    wanted = arguments.get("to_revision") or max((r for r in revisions if r < now), default=None)
    if wanted is None or wanted not in revisions:
        known = ", ".join(str(r) for r in sorted(revisions)) or "none"
        asked = f"revision {wanted}" if wanted else "a revision before the current one"
        raise ToolError(f"deployment/{name} has no {asked} (its revisions: {known}; current: {now})")
    template = _without_hash(revisions[wanted])
    before = current["spec"]["template"]
    if template == before:
        raise ToolError(f"deployment/{name} already runs the template of revision {wanted}: nothing to undo")
    return Plan(
        Deployment,
        "deployment",
        name,
        namespace,
        {"spec": {"template": merge_patch(before, template)}},
        before,
        ("spec", "template"),
        _replicas(current),
        f"roll deployment/{name} back to revision {wanted} (from revision {now})",
    )


async def _plan_scale(api: AsyncClient, arguments: dict) -> Plan:
    """The scale subresource: only `spec.replicas` changes."""
    kind = arguments.get("kind") or "deployment"
    workload = {"deployment": Deployment, "statefulset": StatefulSet}.get(kind)
    if workload is None:
        raise ToolError(f"kind must be deployment or statefulset, not {kind!r}")
    name, namespace, replicas = arguments["name"], arguments["namespace"], arguments["replicas"]
    scale = (await api.get(workload.Scale, name, namespace=namespace)).to_dict()
    before = {"replicas": (scale.get("spec") or {}).get("replicas", 0)}
    return Plan(
        workload.Scale,
        kind,
        name,
        namespace,
        {"spec": {"replicas": replicas}},
        before,
        ("spec",),
        before["replicas"],
        f"scale {kind}/{name} from {before['replicas']} to {replicas} replicas",
    )


async def _revisions(api: AsyncClient, deployment: dict) -> dict[int, dict]:
    """The deployment's ReplicaSets by revision: their pod templates."""
    metadata = deployment["metadata"]
    labels = ((deployment["spec"].get("selector") or {}).get("matchLabels")) or {}
    found: dict[int, dict] = {}
    async for replicaset in api.list(ReplicaSet, namespace=metadata["namespace"], labels=labels):
        item = replicaset.to_dict()
        if _owned_by(item, metadata) and _revision_of(item):
            found[_revision_of(item)] = item["spec"]["template"]
    return found


def _owned_by(item: dict, owner: dict) -> bool:
    for reference in item["metadata"].get("ownerReferences") or []:
        if reference.get("kind") == "Deployment" and reference.get("name") == owner["name"]:
            return not owner.get("uid") or not reference.get("uid") or reference["uid"] == owner["uid"]
    return False


def _revision_of(item: dict) -> int:
    value = (item["metadata"].get("annotations") or {}).get(REVISION, "")
    return int(value) if str(value).isdigit() else 0


def _without_hash(template: dict) -> dict:
    metadata = dict(template.get("metadata") or {})
    labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != TEMPLATE_HASH}
    if labels:
        metadata["labels"] = labels
    else:
        metadata.pop("labels", None)
    return {**template, "metadata": metadata}


def _replicas(deployment: dict) -> int | None:
    return (deployment.get("spec") or {}).get("replicas")


def merge_patch(current: dict, desired: dict) -> dict:
    """The JSON merge patch (RFC 7386) that turns `current` into `desired`: keys it lacks are
    nulled, lists are replaced whole (a strategic merge would keep a removed env var)."""
    patch: dict = {key: None for key in current.keys() - desired.keys()}
    for key, value in desired.items():
        old = current.get(key)
        if key in current and old == value:
            continue
        patch[key] = merge_patch(old, value) if isinstance(old, dict) and isinstance(value, dict) else value
    return patch


# --- dry run and the real write -----------------------------------------------------------------


async def _preview(ctx: ToolContext, arguments: dict, planner: Planner) -> dict:
    """The change sent as a server-side dry run: {ok, summary, diff, replicas, namespace, target,
    blast, dependants}. Only the choice of cluster and namespace raises (nothing was sent)."""
    namespace = arguments["namespace"]
    cluster = await cluster_for_change(ctx, arguments.get("cluster"), namespace)
    result = {"namespace": namespace, "cluster": cluster.name}
    try:
        async with opened(cluster, dry_run=True) as api:
            plan, answer = await _run(api, planner, arguments)
    except (_Failure, ToolError) as failure:
        return {**result, "ok": False, "summary": f"the dry run failed: {failure}", "diff": ""}
    lines = diff_lines(plan.before, _section(answer, plan.section))
    dependants = await _dependants(ctx.organization_id, plan.name)
    summary = f"the API server accepted the dry run: it would {plan.what}"
    if not lines:
        summary += ", and nothing in the object would change"
    return {
        **result,
        "ok": True,
        "summary": summary,
        "diff": "\n".join(lines),
        "replicas": plan.replicas,
        "target": target_of(cluster.name, namespace, plan.kind, plan.name),
        "blast": _blast(plan, dependants),
        "dependants": dependants,
    }


async def _apply(ctx: ToolContext, arguments: dict, planner: Planner) -> dict:
    """The approved change, for real, once."""
    cluster = await cluster_for_change(ctx, arguments.get("cluster"), arguments["namespace"])
    try:
        async with opened(cluster) as api:
            plan, answer = await _run(api, planner, arguments)
    except _Failure as failure:
        raise ToolError(f"the change was not made: {failure}") from None
    return {
        "cluster": cluster.name,
        "target": target_of(cluster.name, plan.namespace, plan.kind, plan.name),
        "done": plan.what,
        "changes": diff_lines(plan.before, _section(answer, plan.section)),
        "replicas": plan.replicas,
    }


class _Failure(Exception):
    """The API server refused, or could not be reached: the message says which, for the model."""


async def _run(api: AsyncClient, planner: Planner, arguments: dict) -> tuple[Plan, dict]:
    """Plan the change and send its patch (a dry run when the client is one): the plan and the
    object the API server answered. Its reads and its write fail alike, as `_Failure`."""
    try:
        plan = await planner(api, arguments)
        answer = await api.patch(
            plan.resource, plan.name, plan.patch, namespace=plan.namespace, patch_type=PatchType.MERGE
        )
    except ApiError as error:
        raise _Failure(f"the API server refused it ({api_error_text(error)})") from None
    except (httpx2.HTTPError, EgressRefused) as error:
        raise _Failure(f"the cluster could not be reached ({outbound.failure_reason(error)})") from None
    return plan, answer.to_dict()


def _section(obj: dict, path: tuple[str, ...]) -> dict:
    for key in path:
        obj = (obj or {}).get(key) or {}
    return obj


# --- what would change --------------------------------------------------------------------------


def diff_lines(before: dict, after: dict) -> list[str]:
    """`field: old → new` for every leaf that differs, lists of named things (containers, env,
    volumes) keyed by name; literal values of secret-looking env vars masked."""
    old, new = _flatten(before), _flatten(after)
    lines = []
    for path in sorted(old.keys() | new.keys()):
        if old.get(path) != new.get(path):
            lines.append(f"{path}: {_shown(path, old.get(path))} → {_shown(path, new.get(path))}")
    if len(lines) > MAX_DIFF_LINES:
        lines = lines[:MAX_DIFF_LINES] + [f"… and {len(lines) - MAX_DIFF_LINES} more changed fields"]
    return lines


def _flatten(value, path: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        flat: dict[str, str] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{path}.{key}" if path else str(key)))
        return flat
    if isinstance(value, list):
        flat = {}
        for index, item in enumerate(value):
            named = isinstance(item, dict) and isinstance(item.get("name"), str)
            flat.update(_flatten(item, f"{path}[{item['name'] if named else index}]"))
        return flat
    return {path: json.dumps(value, ensure_ascii=False)}


def _shown(path: str, value: str | None) -> str:
    if value is None:
        return "(none)"
    env = re.search(r"\.env\[([^\]]+)\]\.value$", path)
    return MASK if env and SECRET_NAME.search(env.group(1)) else value


# --- blast radius -------------------------------------------------------------------------------


def _blast(plan: Plan, dependants: list[str]) -> str:
    replicas = "?" if plan.replicas is None else plan.replicas
    text = f"{replicas} replicas of {plan.kind}/{plan.name} in namespace {plan.namespace}"
    if dependants:
        text += "; depend on it (topology): " + ", ".join(dependants)
    return text


@sync_to_async
def _dependants(organization_id: int, workload: str) -> list[str]:
    """The callers of the topology node named like the workload (by name or its `app` label)."""
    nodes = TopologyNode.objects.filter(organization_id=organization_id)
    node = nodes.filter(name__iexact=workload).first() or nodes.filter(labels__app=workload).first()
    if node is None:
        return []
    graph = topology.expand(organization_id, node, direction="upstream", depth=2)
    return [n["name"] for n in graph["nodes"] if n["relation"] == "upstream"][:MAX_DEPENDANTS]
