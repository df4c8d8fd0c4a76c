"""The pure parts of the fake Kubernetes API server (fakes/kubernetes_api.py): the resource table
(kind, plural, group/version, scope, verbs), label and field selectors, and the three patch
formats, kept apart from the HTTP serving so each can be read on its own.

These follow the API server's documented behaviour closely enough for a client (lightkube, kubectl)
not to notice, not exactly: a strategic merge patch merges the lists of named things (containers,
env, volumes, volume mounts...) by `name` and replaces every other list, which is what the
`patchMergeKey: name` lists of the core types do."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

READ_VERBS = frozenset({"get", "list", "watch"})
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Resource:
    """One kind the fake serves, as the discovery documents describe it."""

    kind: str
    plural: str
    group: str  # "" for the core group
    version: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_resource(self) -> str:
        """How error messages name it: `deployments.apps`, `pods` (core group)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


def _r(kind: str, plural: str, gv: str, namespaced: bool = True, **extra) -> Resource:
    group, _, version = gv.rpartition("/")
    return Resource(kind, plural, group, version, namespaced, singular=kind.lower(), **extra)


RESOURCES: tuple[Resource, ...] = (
    _r("Pod", "pods", "v1", short_names=("po",), subresources=("log", "status")),
    _r("Service", "services", "v1", short_names=("svc",)),
    _r("ConfigMap", "configmaps", "v1", short_names=("cm",)),
    _r("Secret", "secrets", "v1"),
    _r("Event", "events", "v1", short_names=("ev",)),
    _r("PersistentVolumeClaim", "persistentvolumeclaims", "v1", short_names=("pvc",)),
    _r("Node", "nodes", "v1", namespaced=False, short_names=("no",)),
    _r("Namespace", "namespaces", "v1", namespaced=False, short_names=("ns",)),
    _r("Deployment", "deployments", "apps/v1", short_names=("deploy",), subresources=("scale", "status")),
    _r("ReplicaSet", "replicasets", "apps/v1", short_names=("rs",), subresources=("scale", "status")),
    _r("StatefulSet", "statefulsets", "apps/v1", short_names=("sts",), subresources=("scale", "status")),
    _r("DaemonSet", "daemonsets", "apps/v1", short_names=("ds",), subresources=("status",)),
    _r("Job", "jobs", "batch/v1", subresources=("status",)),
    _r("CronJob", "cronjobs", "batch/v1", short_names=("cj",), subresources=("status",)),
    _r("Ingress", "ingresses", "networking.k8s.io/v1", short_names=("ing",)),
    _r("HorizontalPodAutoscaler", "horizontalpodautoscalers", "autoscaling/v2", short_names=("hpa",)),
    _r("Event", "events", "events.k8s.io/v1", short_names=("ev",)),
    _r(
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        "authorization.k8s.io/v1",
        namespaced=False,
        verbs=("create",),
    ),
)
METRICS: tuple[Resource, ...] = (
    _r("PodMetrics", "pods", "metrics.k8s.io/v1beta1", verbs=("get", "list")),
    _r("NodeMetrics", "nodes", "metrics.k8s.io/v1beta1", namespaced=False, verbs=("get", "list")),
)
SCALABLE = {"deployments", "replicasets", "statefulsets"}

# The field selectors the API server accepts beyond metadata.name/metadata.namespace (any other is
# a 400 "field label not supported", as kube-apiserver answers).
FIELD_LABELS: dict[str, set[str]] = {
    "pods": {
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    },
    "events": {
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
        "regarding.kind",
        "regarding.name",
        "regarding.namespace",
        "regarding.uid",
    },
    "nodes": {"spec.unschedulable"},
    "namespaces": {"status.phase"},
    "secrets": {"type"},
    "replicasets": {"status.replicas"},
    "jobs": {"status.successful"},
}


class SelectorError(ValueError):
    """A selector the API server would refuse with 400 BadRequest; the message is its words."""


# --- selectors --------------------------------------------------------------------------------------

_SET_TERM = re.compile(r"^\s*([^\s!=()]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
_TERM = re.compile(r"^\s*([^\s!=()]+)\s*(==|!=|=)\s*([^\s,()]*)\s*$")


def _split_terms(selector: str) -> list[str]:
    """The comma-separated terms of a selector, commas inside `in (a,b)` kept."""
    terms, depth, current = [], 0, ""
    for char in selector:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [term for term in terms if term.strip()]


def label_matcher(selector: str):
    """A predicate over a labels dict for a label selector (=, ==, !=, in, notin, key, !key)."""
    checks = [_label_term(term) for term in _split_terms(selector or "")]
    return lambda labels: all(check(labels or {}) for check in checks)


def _label_term(term: str):
    if match := _SET_TERM.match(term):
        key, op, raw = match.groups()
        values = {value.strip() for value in raw.split(",")}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _TERM.match(term):
        key, op, value = match.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    bare = term.strip()
    if bare.startswith("!") and re.fullmatch(r"![^\s!=()]+", bare):
        return lambda labels: bare[1:] not in labels
    if re.fullmatch(r"[^\s!=()]+", bare):
        return lambda labels: bare in labels
    raise SelectorError(f"unable to parse requirement: found '{term.strip()}', expected: valid selector")


def field_matcher(selector: str, plural: str):
    """A predicate over an object for a field selector (=, ==, != on the supported fields)."""
    allowed = {"metadata.name", "metadata.namespace"} | FIELD_LABELS.get(plural, set())
    checks = []
    for term in _split_terms(selector or ""):
        match = _TERM.match(term)
        if not match:
            raise SelectorError(f"invalid selector: '{selector}'; can't understand '{term.strip()}'")
        path, op, value = match.groups()
        if path not in allowed:
            raise SelectorError(f"field label not supported: {path}")
        checks.append((path, op == "!=", value))
    return lambda obj: all((field_value(obj, path) == value) != negate for path, negate, value in checks)


def field_value(obj: dict, path: str) -> str:
    """The value at a dotted path as a field selector compares it (missing: "")."""
    value: object = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if path == "source" and isinstance(value, dict):
        value = value.get("component")
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


# --- patches ----------------------------------------------------------------------------------------

MERGE_BY_NAME = {
    "containers",
    "initContainers",
    "ephemeralContainers",
    "env",
    "volumes",
    "volumeMounts",
    "imagePullSecrets",
    "volumeDevices",
}


class PatchError(ValueError):
    """A patch the API server would refuse (422/400); the message is its words."""


def merge_patch(target: object, patch: object) -> object:
    """RFC 7386 JSON merge patch: objects merged key by key, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_patch(target: object, patch: object) -> object:
    """A strategic merge patch, simplified: a merge patch whose named lists (MERGE_BY_NAME) merge
    item by item on `name` (`$patch: delete` on an item removes it); `$` directives are dropped."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
        elif key in MERGE_BY_NAME and isinstance(value, list):
            result[key] = _merge_named(result.get(key) or [], value)
        else:
            result[key] = strategic_patch(result.get(key), value)
    return result


def _merge_named(current: list, patch: list) -> list:
    merged = [copy.deepcopy(item) for item in current]
    for item in patch:
        if not isinstance(item, dict) or "name" not in item:
            raise PatchError("strategic merge patch: list items must have a name")
        at = next((i for i, old in enumerate(merged) if old.get("name") == item["name"]), None)
        if item.get("$patch") == "delete":
            if at is not None:
                merged.pop(at)
        elif at is None:
            merged.append(strategic_patch({}, item))
        else:
            merged[at] = strategic_patch(merged[at], item)
    return merged


def json_patch(target: dict, operations: list) -> dict:
    """RFC 6902 JSON patch (add, remove, replace, move, copy, test) on a copy of `target`."""
    document = copy.deepcopy(target)
    if not isinstance(operations, list):
        raise PatchError("json patch: the body is not a list of operations")
    for operation in operations:
        document = _json_operation(document, operation)
    return document


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"json patch: invalid path {path!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _json_operation(document: dict, operation: dict) -> dict:
    op, path = operation.get("op"), _pointer(operation.get("path", ""))
    if op in ("move", "copy"):
        source = _pointer(operation.get("from", ""))
        value = copy.deepcopy(_get(document, source))
        if op == "move":
            _remove(document, source)
        return _add(document, path, value)
    if op == "test":
        if _get(document, path) != operation.get("value"):
            raise PatchError(f"json patch: test failed at {operation.get('path')}")
        return document
    if op == "remove":
        _remove(document, path)
        return document
    if op == "replace":
        _get(document, path)  # must exist
        _remove(document, path)
        return _add(document, path, copy.deepcopy(operation.get("value")))
    if op == "add":
        return _add(document, path, copy.deepcopy(operation.get("value")))
    raise PatchError(f"json patch: unknown op {op!r}")


def _parent(document: object, path: list[str]) -> tuple[object, str]:
    return _get(document, path[:-1]), path[-1]


def _get(document: object, path: list[str]) -> object:
    for part in path:
        if isinstance(document, list) and part.isdigit() and int(part) < len(document):
            document = document[int(part)]
        elif isinstance(document, dict) and part in document:
            document = document[part]
        else:
            raise PatchError(f"json patch: no value at /{'/'.join(path)}")
    return document


def _add(document: object, path: list[str], value: object) -> object:
    if not path:
        return value
    parent, key = _parent(document, path)
    if isinstance(parent, list):
        parent.insert(len(parent) if key == "-" else int(key), value)
    elif isinstance(parent, dict):
        parent[key] = value
    else:
        raise PatchError(f"json patch: cannot add at /{'/'.join(path)}")
    return document


def _remove(document: object, path: list[str]) -> None:
    _get(document, path)
    parent, key = _parent(document, path)
    if isinstance(parent, list):
        parent.pop(int(key))
    else:
        parent.pop(key)  # type: ignore[union-attr]
