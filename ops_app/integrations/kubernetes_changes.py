"""Reading a cluster for its change events (docs/kubernetes.md): the Deployments with
their ReplicaSet revisions, and the ConfigMaps, of the namespaces the organization allows.

This module only reads and flattens. What counts as new since the last poll, and the words of a
change event, are ops_app.estate.cluster_changes' (the estate and the integrations do not import
each other; ops_app.cluster_collector composes the two). Everything returned is plain data (str, int, dict,
datetime), so the estate side needs no lightkube type.

Secrets are never requested: a Secret named by a pod template is kept as a reference
("Secret payments-db"), its content is not read. ConfigMap values are kept cut to
`VALUE_LIMIT` characters with a hash of the whole value, so a change past the cut is still seen.
"""

from __future__ import annotations

import datetime as dt
import hashlib

from lightkube import ALL_NS
from lightkube.models.core_v1 import Container, EnvVar, PodTemplateSpec
from lightkube.models.meta_v1 import ManagedFieldsEntry, ObjectMeta
from lightkube.resources.apps_v1 import Deployment, ReplicaSet
from lightkube.resources.core_v1 import ConfigMap

from ops_app.core.cluster_snapshot import ClusterState, ConfigMapState, DeploymentState, Revision
from ops_app.integrations.kubernetes import Cluster, client

REVISION = "deployment.kubernetes.io/revision"
RESTARTED_AT = "kubectl.kubernetes.io/restartedAt"
VALUE_LIMIT = 100
DEFAULT_MANAGER = "kubernetes"


async def read_cluster(cluster: Cluster) -> ClusterState:
    """Deployments, their ReplicaSets and the ConfigMaps of every namespace the cluster allows.
    Raises what lightkube and httpx2 raise (ApiError for a 401/403, HTTPError when down)."""
    api = client(cluster)
    try:
        deployments: list[DeploymentState] = []
        configmaps: list[ConfigMapState] = []
        for namespace in cluster.namespaces or (ALL_NS,):
            replicasets: dict[str, list[ReplicaSet]] = {}
            async for rs in api.list(ReplicaSet, namespace=namespace):
                replicasets.setdefault(rs.metadata.namespace if rs.metadata else "", []).append(rs)
            async for deployment in api.list(Deployment, namespace=namespace):
                namespace_of = deployment.metadata.namespace if deployment.metadata else ""
                deployments.append(deployment_state(deployment, replicasets.get(namespace_of, [])))
            configmaps += [configmap_state(cm) async for cm in api.list(ConfigMap, namespace=namespace)]
    finally:
        await api.close()
    return ClusterState(deployments, configmaps)


# --- deployments ---------------------------------------------------------------------------------


def deployment_state(deployment: Deployment, replicasets: list[ReplicaSet]) -> DeploymentState:
    """A deployment with the revisions of the ReplicaSets it owns, oldest first."""
    meta = deployment.metadata or ObjectMeta()
    owned = [rs for rs in replicasets if _owned_by(rs, meta)]
    revisions = sorted((r for r in map(_revision, owned) if r is not None), key=lambda r: r.number)
    entry = latest_writer(meta.managedFields, ("f:spec", "f:template"))
    return DeploymentState(
        namespace=meta.namespace or "",
        name=meta.name or "",
        uid=meta.uid or "",
        manager=entry.manager if entry and entry.manager else DEFAULT_MANAGER,
        template_changed_at=entry.time if entry else None,
        revisions=revisions,
    )


def _owned_by(replicaset: ReplicaSet, owner: ObjectMeta) -> bool:
    meta = replicaset.metadata or ObjectMeta()
    if meta.namespace != owner.namespace:
        return False
    for reference in meta.ownerReferences or []:
        if reference.kind == "Deployment" and (reference.uid == owner.uid or reference.name == owner.name):
            return True
    return False


def _revision(replicaset: ReplicaSet) -> Revision | None:
    meta = replicaset.metadata or ObjectMeta()
    number = (meta.annotations or {}).get(REVISION, "")
    if not str(number).isdigit():
        return None
    template = replicaset.spec.template if replicaset.spec else None
    return Revision(int(number), meta.uid or "", meta.creationTimestamp, template_facts(template))


def template_facts(template: PodTemplateSpec | None) -> dict:
    """What a rollout changes, flat: per container its image, resources and environment (values
    from a ConfigMap or Secret as references, never the Secret's value), the ConfigMaps and Secrets
    mounted, and the restart stamp of `kubectl rollout restart`."""
    if template is None:
        return {}
    spec = template.spec
    annotations = (template.metadata.annotations if template.metadata else None) or {}
    facts: dict = {"containers": {c.name: _container(c) for c in (spec.containers if spec else []) or []}}
    facts["volumes"] = sorted(_volume_refs(spec.volumes if spec else None))
    if annotations.get(RESTARTED_AT):
        facts["restarted_at"] = annotations[RESTARTED_AT]
    return facts


def _container(container: Container) -> dict:
    resources = container.resources
    amounts = {}
    if resources is not None:
        amounts.update({f"{k} limit": str(v) for k, v in (resources.limits or {}).items()})
        amounts.update({f"{k} request": str(v) for k, v in (resources.requests or {}).items()})
    env = {var.name: _env_value(var) for var in container.env or []}
    env_from = []
    for source in container.envFrom or []:
        if source.configMapRef is not None:
            env_from.append(f"ConfigMap {source.configMapRef.name}")
        if source.secretRef is not None:
            env_from.append(f"Secret {source.secretRef.name}")
    return {"image": container.image or "", "resources": amounts, "env": env, "env_from": sorted(env_from)}


def _env_value(var: EnvVar) -> str:
    """A literal value (cut), or where the value comes from (`from Secret payments-db`)."""
    source = var.valueFrom
    if source is None:
        return cut(var.value or "")
    if source.configMapKeyRef is not None:
        return _key_ref("ConfigMap", source.configMapKeyRef.name, source.configMapKeyRef.key, var.name)
    if source.secretKeyRef is not None:
        return _key_ref("Secret", source.secretKeyRef.name, source.secretKeyRef.key, var.name)
    if source.fieldRef is not None:
        return f"from field {source.fieldRef.fieldPath}"
    if source.resourceFieldRef is not None:
        return f"from resource {source.resourceFieldRef.resource}"
    return "from a reference"


def _key_ref(kind: str, name: str | None, key: str | None, variable: str | None) -> str:
    """`from ConfigMap payments-config` (its key named when it is not the variable's own name)."""
    where = f"from {kind} {name}"
    return where if key == variable else f"{where} (key {key})"


def _volume_refs(volumes) -> list[str]:
    refs = []
    for volume in volumes or []:
        if volume.configMap is not None:
            refs.append(f"ConfigMap {volume.configMap.name}")
        if volume.secret is not None:
            refs.append(f"Secret {volume.secret.secretName}")
    return refs


# --- configmaps ----------------------------------------------------------------------------------


def configmap_state(configmap: ConfigMap) -> ConfigMapState:
    """A ConfigMap's identity, its last writer and its content (values cut, each with its hash)."""
    meta = configmap.metadata or ObjectMeta()
    content = {key: _value(value) for key, value in (configmap.data or {}).items()}
    for key, value in (configmap.binaryData or {}).items():
        content[key] = {"hash": _hash(value), "value": f"(binary, {len(value)} base64 characters)"}
    entry = latest_writer(meta.managedFields, ("f:data",), ("f:binaryData",))
    return ConfigMapState(
        namespace=meta.namespace or "",
        name=meta.name or "",
        uid=meta.uid or "",
        resource_version=meta.resourceVersion or "",
        manager=entry.manager if entry and entry.manager else DEFAULT_MANAGER,
        changed_at=entry.time if entry else None,
        created_at=meta.creationTimestamp,
        content=content,
    )


def _value(value: str) -> dict:
    return {"hash": _hash(value), "value": cut(value)}


def _hash(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:32]


def cut(value: str, limit: int = VALUE_LIMIT) -> str:
    """A value as a change event keeps it: one line, at most `limit` characters."""
    flat = " ".join(value.split()) if "\n" in value else value
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- who -----------------------------------------------------------------------------------------


def latest_writer(
    entries: list[ManagedFieldsEntry] | None, *paths: tuple[str, ...]
) -> ManagedFieldsEntry | None:
    """The newest managedFields entry (not a status subresource) owning one of `paths`, e.g.
    ("f:spec", "f:template"): its manager is who made the change ("kubectl-edit", "helm")."""
    found = None
    for entry in entries or []:
        if entry.subresource or not any(_owns(entry.fieldsV1 or {}, path) for path in paths):
            continue
        if found is None or _time(entry) >= _time(found):
            found = entry
    return found


def _owns(fields: dict, path: tuple[str, ...]) -> bool:
    node = fields
    for step in path:
        if not isinstance(node, dict) or step not in node:
            return False
        node = node[step]
    return True


def _time(entry: ManagedFieldsEntry) -> dt.datetime:
    return entry.time or dt.datetime.min.replace(tzinfo=dt.UTC)
