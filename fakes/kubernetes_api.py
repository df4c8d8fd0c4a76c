"""A fake Kubernetes API server for the tests: real HTTPS on 127.0.0.1 (a CA and a server
certificate made at start), speaking the REST wire format well enough for lightkube's AsyncClient
(and kubectl) to work against it unchanged.

What it serves (fakes/kubernetes_wire.py has the resource table):
- discovery: /version, /api, /api/v1, /apis, /apis/<group>/<version>; metrics.k8s.io only with
  `metrics_server=True` (else 404 "the server could not find the requested resource", as a cluster
  without metrics-server answers); with `metrics_unavailable` too, the group is listed but its
  requests answer 503 "the server is currently unable to handle the request" (metrics-server
  registered and down);
- get, list (namespaced and all-namespaces paths; labelSelector, fieldSelector, limit + continue),
  create (POST), update (PUT), patch (merge, strategic, JSON patch), delete, with `dryRun=All`
  answering the would-be object and changing nothing; the `scale` subresource (autoscaling/v1
  Scale) of deployments, replicasets and statefulsets; pod logs (`.../pods/<name>/log` with
  container, previous, tailLines, sinceSeconds, sinceTime, timestamps);
- SelfSubjectAccessReview: allowed per the token's verbs (and namespaces);
- bearer-token auth: `tokens` maps a token to the verbs it may use (None: all). No token or an
  unknown one: 401; a verb the token lacks: 403 in the API server's words. `token_namespaces`
  optionally limits a token to some namespaces (all-namespace lists and cluster-scoped kinds then
  403 for it, as a namespaced RoleBinding does).

The object store holds whatever `put` is given, as given (metadata filled in). Only writes through
the API run a tiny Deployment controller: a write that changes a Deployment's `spec.template`
makes (or, for a template seen before, reuses) a ReplicaSet `<deployment>-<hash>` owned by it, with
`deployment.kubernetes.io/revision` one above the highest so far, scaled to the deployment's
replicas, the others scaled to 0 — so a rollout history reflects the writes. Pods are not created
or replaced. `watch` and `deletecollection` are not served (405). Core v1 and events.k8s.io/v1
Events are stored apart (a seeded core Event is not seen through events.k8s.io).

Every request is recorded (`requests`, `writes()`), and faults can be scripted (`fail_next`,
`hang_next`)."""

from __future__ import annotations

import base64
import copy
import hashlib
import ipaddress
import json
import re
import socket
import ssl
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from fakes import kubernetes_wire as wire

REVISION = "deployment.kubernetes.io/revision"
PUBLIC_PATHS = {"/version", "/healthz", "/livez", "/readyz"}
WRITE_METHODS = {"PATCH", "PUT", "POST", "DELETE"}
SSAR_PATH = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}
_STAMPED = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) (.*)$")


@dataclass
class Recorded:
    """One request as the fake received it."""

    method: str
    path: str
    query: dict[str, str]
    body: object
    token: str | None
    dry_run: bool
    at: float = field(default_factory=time.monotonic)
    status: int = 0


class ApiFailure(Exception):
    """Answered as a `Status` object with this code, reason and message."""

    def __init__(self, code: int, message: str, reason: str = "", details: dict | None = None) -> None:
        super().__init__(message)
        self.code, self.message = code, message
        self.reason = reason or REASONS.get(code, "")
        self.details = details


def status_body(code: int, message: str, reason: str = "", details: dict | None = None) -> dict:
    """The API server's error body."""
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason or REASONS.get(code, ""),
        "code": code,
    }
    if details:
        body["details"] = details
    return body


def timestamp(at: datetime | None = None) -> str:
    """RFC 3339 in UTC at second precision, as the API server writes metadata times."""
    return (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class _Route:
    resource: wire.Resource
    namespace: str | None
    name: str | None
    subresource: str | None


class KubernetesFake:
    """The fake API server. `with KubernetesFake(tokens=...) as fake:` or `start()`/`stop()`."""

    def __init__(
        self,
        tokens: dict[str, set[str] | None] | None = None,
        metrics_server: bool = False,
        metrics_unavailable: bool = False,
        token_namespaces: dict[str, set[str]] | None = None,
        git_version: str = "v1.31.2",
    ) -> None:
        self.tokens = dict(tokens or {"admin-token": None})
        self.token_namespaces = dict(token_namespaces or {})
        self.metrics_server = metrics_server
        self.metrics_unavailable = metrics_unavailable
        self.git_version = git_version
        self.requests: list[Recorded] = []
        self.lock = threading.RLock()
        self._objects: dict[tuple[str, str, str, str], dict] = {}
        self._logs: dict[tuple[str, str, str | None, bool], list[tuple[datetime, str]]] = {}
        self._version = 1000
        self._failures: list[int] = []
        self._hangs: list[float] = []
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self.ca_pem, self._cert_pem, self._key_pem = _certificates()

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> KubernetesFake:
        """Listen on an OS-chosen loopback port and serve in a daemon thread."""
        self._stopping.clear()
        self._server = _TLSServer(("127.0.0.1", 0), _handler(self), self._tls_context())
        threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fake-k8s", daemon=True
        ).start()
        return self

    def stop(self) -> None:
        """Stop serving; a request held by `hang_next` is let go first."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> KubernetesFake:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._server is not None, "start() the fake first"
        return f"https://127.0.0.1:{self._server.server_address[1]}"

    def kubeconfig(
        self, token: str = "admin-token", namespace: str = "default", context: str = "fake"
    ) -> str:
        """A kubeconfig (YAML) with inline credentials for this server and `token`."""
        ca_data = base64.b64encode(self.ca_pem.encode()).decode()
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": context,
            "clusters": [
                {"name": context, "cluster": {"server": self.url, "certificate-authority-data": ca_data}}
            ],
            "users": [{"name": f"{context}-user", "user": {"token": token}}],
            "contexts": [
                {
                    "name": context,
                    "context": {"cluster": context, "user": f"{context}-user", "namespace": namespace},
                }
            ],
        }
        return yaml.safe_dump(document, sort_keys=False)

    def _tls_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.TemporaryDirectory() as directory:
            cert, key = Path(directory) / "server.crt", Path(directory) / "server.key"
            cert.write_text(self._cert_pem)
            key.write_text(self._key_pem)
            context.load_cert_chain(cert, key)
        return context

    # --- scripting and inspection -------------------------------------------------------------

    def put(self, obj: dict) -> dict:
        """Add or replace an object as given (no controller runs); missing metadata (uid,
        resourceVersion, creationTimestamp, generation of workloads) is filled in. Returns a copy
        of what is stored."""
        resource = self._resource_of(obj)
        with self.lock:
            stored = self._filled(resource, copy.deepcopy(obj))
            self._objects[self._key(resource, stored)] = stored
            return copy.deepcopy(stored)

    def get_object(self, kind: str, name: str, namespace: str = "", api_version: str = "") -> dict | None:
        """A copy of a stored object (None when absent), to assert what writes did."""
        resource = self._resource_of({"kind": kind, "apiVersion": api_version})
        with self.lock:
            found = self._objects.get((resource.api_version, resource.plural, namespace, name))
            return copy.deepcopy(found)

    def objects(self, kind: str, namespace: str | None = None, api_version: str = "") -> list[dict]:
        """Copies of the stored objects of a kind (in one namespace, or all)."""
        resource = self._resource_of({"kind": kind, "apiVersion": api_version})
        with self.lock:
            return [
                copy.deepcopy(obj)
                for (gv, plural, ns, _), obj in sorted(self._objects.items())
                if (gv, plural) == (resource.api_version, resource.plural) and namespace in (None, ns)
            ]

    def set_log(
        self, namespace: str, pod: str, text: str, container: str | None = None, previous: bool = False
    ) -> None:
        """The log of a pod's container (None: its first container); `previous` for the previous
        (terminated) instance. A line may start with an RFC 3339 UTC timestamp and a space (its
        time for sinceSeconds/sinceTime); other lines are timed now."""
        now = datetime.now(UTC)
        lines = []
        for line in text.splitlines():
            match = _STAMPED.match(line)
            at = datetime.fromisoformat(match.group(1).replace("Z", "+00:00")) if match else now
            lines.append((at, match.group(2) if match else line))
        with self.lock:
            self._logs[(namespace, pod, container, previous)] = lines

    def fail_next(self, status: int, times: int = 1) -> None:
        """The next `times` requests are answered with a `Status` of this code."""
        with self.lock:
            self._failures.extend([status] * times)

    def hang_next(self, seconds: float) -> None:
        """The next request is held `seconds` before it is answered (let go at `stop`)."""
        with self.lock:
            self._hangs.append(seconds)

    def writes(self) -> list[Recorded]:
        """The requests that changed (or tried to change) something: PATCH/PUT/POST/DELETE not
        in dry-run mode, SelfSubjectAccessReviews left out."""
        with self.lock:
            return [
                r
                for r in self.requests
                if r.method in WRITE_METHODS and not r.dry_run and r.path.rstrip("/") != SSAR_PATH
            ]

    def clear(self) -> None:
        """Forget the recorded requests."""
        with self.lock:
            self.requests.clear()

    # --- serving ------------------------------------------------------------------------------

    def handle(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> tuple[int, str, bytes]:
        """One request: (status, content type, body)."""
        parts = urlsplit(target)
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        token = _bearer(headers.get("authorization", ""))
        record = Recorded(method, parts.path, query, _json_or_none(raw), token, query.get("dryRun") == "All")
        with self.lock:
            self.requests.append(record)
            failure = self._failures.pop(0) if self._failures else None
            hang = self._hangs.pop(0) if self._hangs else None
        if hang is not None:
            self._stopping.wait(hang)
        try:
            if failure is not None:
                raise ApiFailure(failure, f"the fake was told to fail this request with {failure}")
            status, content_type, body = self._answer(method, parts.path, query, headers, raw, token)
        except ApiFailure as error:
            status, content_type = error.code, "application/json"
            body = json.dumps(status_body(error.code, error.message, error.reason, error.details)).encode()
        except Exception as error:  # noqa: BLE001 - a fake's bug answers 500, visibly, not a dropped connection
            status, content_type = 500, "application/json"
            body = json.dumps(status_body(500, f"the fake failed: {type(error).__name__}: {error}")).encode()
        record.status = status
        return status, content_type, body

    def _answer(
        self, method: str, path: str, query: dict, headers: dict, raw: bytes, token: str | None
    ) -> tuple[int, str, bytes]:
        path = path.rstrip("/") or "/"
        if path not in PUBLIC_PATHS and token not in self.tokens:
            raise ApiFailure(401, "Unauthorized")
        if path in PUBLIC_PATHS:
            payload = self._version_info() if path == "/version" else "ok"
            return _json(200, payload) if path == "/version" else (200, "text/plain", b"ok")
        if self.metrics_server and self.metrics_unavailable and path.startswith("/apis/metrics.k8s.io/"):
            raise ApiFailure(503, "the server is currently unable to handle the request")
        discovery = self._discovery(path)
        if discovery is not None:
            return _json(200, discovery)
        route = self._route(path)
        if method == "GET" and route.subresource == "log":
            self._authorize(token, "get", route)
            return 200, "text/plain", self._log(route, query).encode()
        body = _json_or_none(raw) if raw else None
        status, payload = self._dispatch(method, route, query, headers, body, token)
        return _json(status, payload)

    def _dispatch(
        self, method: str, route: _Route, query: dict, headers: dict, body: object, token: str | None
    ) -> tuple[int, dict]:
        verb = _verb(method, route, query)
        if route.resource.plural == "selfsubjectaccessreviews" and verb == "create":
            return 201, self._access_review(body, token)
        self._authorize(token, verb, route)
        if route.subresource not in (None, "scale") or (
            route.subresource == "scale" and route.resource.plural not in wire.SCALABLE
        ):
            raise ApiFailure(404, "the server could not find the requested resource")
        if verb not in route.resource.verbs or verb in ("watch", "deletecollection"):
            raise ApiFailure(405, f"the fake does not serve {verb} on {route.resource.plural}")
        dry = query.get("dryRun") == "All"
        with self.lock:
            if verb == "list":
                return 200, self._list(route, query)
            if verb == "create":
                return 201, self._create(route, body, dry)
            if route.subresource == "scale":
                return 200, self._scale(verb, route, body, headers, dry)
            if verb == "get":
                return 200, copy.deepcopy(self._existing(route))
            if verb == "delete":
                return 200, self._delete(route, dry)
            return 200, self._update(verb, route, body, headers, dry)

    # --- routing and authorization ------------------------------------------------------------

    def _served(self) -> tuple[wire.Resource, ...]:
        return wire.RESOURCES + (wire.METRICS if self.metrics_server else ())

    def _route(self, path: str) -> _Route:
        parts = [part for part in path.split("/") if part]
        if parts[:1] == ["api"] and len(parts) > 2:
            group_version, rest = parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) > 3:
            group_version, rest = f"{parts[1]}/{parts[2]}", parts[3:]
        else:
            raise ApiFailure(404, "the server could not find the requested resource")
        namespace = None
        if rest[0] == "namespaces" and len(rest) > 2:
            namespace, rest = rest[1], rest[2:]
        resource = next(
            (r for r in self._served() if (r.api_version, r.plural) == (group_version, rest[0])), None
        )
        if resource is None or len(rest) > 3 or (namespace is not None and not resource.namespaced):
            raise ApiFailure(404, "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        return _Route(resource, namespace, name, rest[2] if len(rest) > 2 else None)

    def _authorize(self, token: str | None, verb: str, route: _Route) -> None:
        verbs = self.tokens.get(token or "")
        scope = self.token_namespaces.get(token or "")
        allowed = (verbs is None or verb in verbs) and (
            scope is None or (route.namespace is not None and route.namespace in scope)
        )
        if allowed:
            return
        resource = route.resource
        plural = f"{resource.plural}/{route.subresource}" if route.subresource else resource.plural
        subject = f'{resource.group_resource} "{route.name}"' if route.name else resource.group_resource
        where = f'in the namespace "{route.namespace}"' if route.namespace else "at the cluster scope"
        message = (
            f'{subject} is forbidden: User "{_user(token)}" cannot {verb} resource "{plural}" '
            f'in API group "{resource.group}" {where}'
        )
        details = {"kind": resource.plural, **({"name": route.name} if route.name else {})}
        if resource.group:
            details["group"] = resource.group
        raise ApiFailure(403, message, details=details)

    def _access_review(self, body: object, token: str | None) -> dict:
        """A SelfSubjectAccessReview, answered from the token's verbs and namespaces."""
        review = copy.deepcopy(body) if isinstance(body, dict) else {}
        attributes = (review.get("spec") or {}).get("resourceAttributes")
        verbs = self.tokens.get(token or "")
        if attributes is None:
            allowed = True  # nonResourceAttributes: discovery paths are open to every user
        else:
            scope = self.token_namespaces.get(token or "")
            namespace = attributes.get("namespace") or None
            allowed = (verbs is None or attributes.get("verb") in verbs) and (
                scope is None or namespace in scope
            )
        review.update(apiVersion="authorization.k8s.io/v1", kind="SelfSubjectAccessReview")
        review.setdefault("metadata", {}).setdefault("creationTimestamp", None)
        review["status"] = {"allowed": allowed}
        if allowed:
            review["status"]["reason"] = f'RBAC: allowed by the fake\'s rules for "{_user(token)}"'
        return review

    # --- reads --------------------------------------------------------------------------------

    def _key(self, resource: wire.Resource, obj: dict) -> tuple[str, str, str, str]:
        metadata = obj.get("metadata") or {}
        namespace = (metadata.get("namespace") or "") if resource.namespaced else ""
        return resource.api_version, resource.plural, namespace, metadata.get("name", "")

    def _existing(self, route: _Route) -> dict:
        key = (route.resource.api_version, route.resource.plural, route.namespace or "", route.name or "")
        found = self._objects.get(key)
        if found is None or (route.resource.namespaced and route.namespace is None):
            raise ApiFailure(
                404,
                f'{route.resource.group_resource} "{route.name}" not found',
                details={"name": route.name, "kind": route.resource.plural},
            )
        return found

    def _list(self, route: _Route, query: dict) -> dict:
        resource = route.resource
        try:
            labels = wire.label_matcher(query.get("labelSelector", ""))
            fields = wire.field_matcher(query.get("fieldSelector", ""), resource.plural)
        except wire.SelectorError as error:
            raise ApiFailure(400, str(error)) from None
        items = [
            copy.deepcopy(obj)
            for (gv, plural, ns, _), obj in sorted(self._objects.items())
            if (gv, plural) == (resource.api_version, resource.plural)
            and (route.namespace is None or ns == route.namespace)
            and labels((obj.get("metadata") or {}).get("labels"))
            and fields(obj)
        ]
        metadata: dict = {"resourceVersion": str(self._version)}
        start = _offset(query.get("continue", ""))
        limit = int(query["limit"]) if query.get("limit", "").isdigit() and int(query["limit"]) > 0 else 0
        end = start + limit if limit else len(items)
        if end < len(items):
            metadata["continue"] = base64.urlsafe_b64encode(str(end).encode()).decode()
            metadata["remainingItemCount"] = len(items) - end
        kind = f"{resource.kind}List"
        return {
            "kind": kind,
            "apiVersion": resource.api_version,
            "metadata": metadata,
            "items": items[start:end],
        }

    def _log(self, route: _Route, query: dict) -> str:
        with self.lock:
            pod = copy.deepcopy(self._existing(route))
        containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
        inits = [c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or []]
        container = query.get("container") or None
        if container is None and len(containers) > 1:
            choices = " ".join(containers)
            raise ApiFailure(
                400, f"a container name must be specified for pod {route.name}, choose one of: [{choices}]"
            )
        if container is not None and container not in containers + inits:
            raise ApiFailure(400, f"container {container} is not valid for pod {route.name}")
        container = container or (containers[0] if containers else None)
        previous = query.get("previous") == "true"
        lines = self._stored_log(route, container, containers, previous)
        if lines is None and previous:
            raise ApiFailure(
                400, f'previous terminated container "{container}" in pod "{route.name}" not found'
            )
        return _log_text(lines or [], query)

    def _stored_log(
        self, route: _Route, container: str | None, containers: list, previous: bool
    ) -> list | None:
        with self.lock:
            found = self._logs.get((route.namespace or "", route.name or "", container, previous))
            if found is None and containers and container == containers[0]:
                found = self._logs.get((route.namespace or "", route.name or "", None, previous))
            return found

    # --- writes -------------------------------------------------------------------------------

    def _create(self, route: _Route, body: object, dry: bool) -> dict:
        if not isinstance(body, dict) or route.name is not None:
            raise ApiFailure(400, "the body of a create must be an object, posted to the collection")
        obj = copy.deepcopy(body)
        metadata = obj.setdefault("metadata", {})
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = metadata["generateName"] + uuid.uuid4().hex[:5]
        if not metadata.get("name"):
            raise ApiFailure(
                422,
                f"{route.resource.kind} is invalid: metadata.name: Required value: "
                "name or generateName is required",
            )
        if route.resource.namespaced:
            if metadata.get("namespace", route.namespace) != route.namespace:
                raise ApiFailure(
                    400,
                    "the namespace of the provided object does not match the namespace sent on the request",
                )
            metadata["namespace"] = route.namespace
        obj.update(apiVersion=route.resource.api_version, kind=route.resource.kind)
        key = self._key(route.resource, obj)
        if key in self._objects:
            raise ApiFailure(
                409, f'{route.resource.group_resource} "{metadata["name"]}" already exists', "AlreadyExists"
            )
        obj = self._filled(route.resource, obj, bump=not dry)
        if not dry:
            self._objects[key] = obj
            if route.resource.plural == "deployments":
                self._rollout(obj)
        return copy.deepcopy(obj)

    def _update(self, verb: str, route: _Route, body: object, headers: dict, dry: bool) -> dict:
        current = self._existing(route)
        if verb == "patch":
            new = _patched(current, body, headers.get("content-type", ""))
        elif isinstance(body, dict):
            new = copy.deepcopy(body)
        else:
            raise ApiFailure(400, "the body of an update must be an object")
        return self._write(route, current, new, dry)

    def _write(self, route: _Route, current: dict, new: dict, dry: bool) -> dict:
        """Store `new` in place of `current` (unless dry): identity kept, versions bumped."""
        resource, metadata = route.resource, new.setdefault("metadata", {})
        sent_version = metadata.get("resourceVersion")
        if sent_version and sent_version != current["metadata"]["resourceVersion"]:
            raise ApiFailure(
                409,
                f'Operation cannot be fulfilled on {resource.group_resource} "{route.name}": the object has '
                "been modified; please apply your changes to the latest version and try again",
            )
        if metadata.get("name", route.name) != route.name:
            raise ApiFailure(
                400,
                f"the name of the object ({metadata.get('name')}) does not match "
                f"the name on the URL ({route.name})",
            )
        for key in ("name", "namespace", "uid", "creationTimestamp", "resourceVersion", "generation"):
            if key in current["metadata"]:
                metadata[key] = current["metadata"][key]
        new.update(apiVersion=resource.api_version, kind=resource.kind)
        if "status" in resource.subresources and "status" in current:
            new["status"] = copy.deepcopy(current["status"])  # written through .../status only
        if new.get("spec") != current.get("spec") and "generation" in metadata:
            metadata["generation"] = metadata["generation"] + 1
        if dry:
            return copy.deepcopy(new)
        self._version += 1
        metadata["resourceVersion"] = str(self._version)
        self._objects[self._key(resource, new)] = new
        template_changed = (new.get("spec") or {}).get("template") != (current.get("spec") or {}).get(
            "template"
        )
        if resource.plural == "deployments" and template_changed:
            self._rollout(new)
        return copy.deepcopy(new)

    def _delete(self, route: _Route, dry: bool) -> dict:
        current = self._existing(route)
        if not dry:
            self._version += 1
            del self._objects[self._key(route.resource, current)]
        return copy.deepcopy(current)

    def _scale(self, verb: str, route: _Route, body: object, headers: dict, dry: bool) -> dict:
        """The autoscaling/v1 Scale of a workload; a write sets the workload's spec.replicas."""
        current = self._existing(route)
        scale = _scale_of(current)
        if verb == "get":
            return scale
        if verb == "patch":
            new_scale = _patched(scale, body, headers.get("content-type", ""))
        elif isinstance(body, dict):
            new_scale = copy.deepcopy(body)
        else:
            raise ApiFailure(400, "the body of an update must be a Scale")
        replicas = (new_scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise ApiFailure(
                422, f'Scale.autoscaling "{route.name}" is invalid: spec.replicas: Invalid value'
            )
        new = copy.deepcopy(current)
        new.setdefault("spec", {})["replicas"] = replicas
        written = self._write(route, current, new, dry)
        return _scale_of(written)

    def _rollout(self, deployment: dict) -> None:
        """The tiny Deployment controller: the ReplicaSet of the deployment's template becomes the
        newest revision (made when the template is new), the others are scaled to 0."""
        metadata, spec = deployment["metadata"], deployment.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        namespace, name = metadata.get("namespace", ""), metadata["name"]
        owned = [
            rs
            for (gv, plural, ns, _), rs in self._objects.items()
            if (gv, plural, ns) == ("apps/v1", "replicasets", namespace) and _owned_by(rs, name)
        ]
        revision = 1 + max((_revision(rs) for rs in owned), default=0)
        same = next((rs for rs in owned if _without_hash(rs) == _unhashed(template)), None)
        target = same or self._new_replica_set(deployment, template)
        for rs in owned:
            if rs is not target:
                rs["spec"]["replicas"] = 0
        target.setdefault("metadata", {}).setdefault("annotations", {})[REVISION] = str(revision)
        target["spec"]["replicas"] = spec.get("replicas", 1)
        for obj in (target, *owned):
            self._version += 1
            obj["metadata"]["resourceVersion"] = str(self._version)
        metadata.setdefault("annotations", {})[REVISION] = str(revision)

    def _new_replica_set(self, deployment: dict, template: dict) -> dict:
        metadata = deployment["metadata"]
        digest = hashlib.sha256(json.dumps(_unhashed(template), sort_keys=True).encode()).hexdigest()[:10]
        template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = digest
        selector = copy.deepcopy((deployment.get("spec") or {}).get("selector") or {})
        selector.setdefault("matchLabels", {})["pod-template-hash"] = digest
        owner = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "name": metadata["name"],
            "uid": metadata["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
        labels = {**(template["metadata"].get("labels") or {})}
        replica_set = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": f"{metadata['name']}-{digest}",
                "namespace": metadata.get("namespace", ""),
                "labels": labels,
                "ownerReferences": [owner],
            },
            "spec": {"replicas": 0, "selector": selector, "template": template},
        }
        replica_set = self._filled(self._resource_of(replica_set), replica_set)
        self._objects[self._key(self._resource_of(replica_set), replica_set)] = replica_set
        return replica_set

    # --- helpers ------------------------------------------------------------------------------

    def _resource_of(self, obj: dict) -> wire.Resource:
        kind, api_version = obj.get("kind"), obj.get("apiVersion") or ""
        for resource in wire.RESOURCES + wire.METRICS:
            if resource.kind == kind and api_version in ("", resource.api_version):
                return resource
        raise ValueError(f"the fake does not serve {api_version or '?'} {kind}")

    def _filled(self, resource: wire.Resource, obj: dict, bump: bool = True) -> dict:
        """Fill apiVersion, kind, uid, resourceVersion, creationTimestamp (and generation)."""
        obj.update(apiVersion=resource.api_version, kind=resource.kind)
        metadata = obj.setdefault("metadata", {})
        if resource.namespaced:
            metadata.setdefault("namespace", "default")
        metadata.setdefault("uid", str(uuid.uuid4()))
        metadata.setdefault("creationTimestamp", timestamp())
        if resource.group in ("apps", "batch", "autoscaling", "networking.k8s.io") and "spec" in obj:
            metadata.setdefault("generation", 1)
        if bump:
            self._version += 1
        metadata["resourceVersion"] = str(self._version)
        return obj

    def _version_info(self) -> dict:
        major, minor = self.git_version.lstrip("v").split(".")[:2]
        return {
            "major": major,
            "minor": minor,
            "gitVersion": self.git_version,
            "gitCommit": "0" * 40,
            "gitTreeState": "clean",
            "buildDate": "2026-01-01T00:00:00Z",
            "goVersion": "go1.22.8",
            "compiler": "gc",
            "platform": "linux/amd64",
        }

    def _discovery(self, path: str) -> dict | None:
        """The discovery documents, or None when `path` is not one."""
        served = self._served()
        if path == "/api":
            return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}
        if path == "/apis":
            groups = sorted({r.group for r in served if r.group})
            return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g, served) for g in groups]}
        for group_version in {r.api_version for r in served}:
            prefix = "/api/" if "/" not in group_version else "/apis/"
            if path == prefix + group_version:
                return _resource_list(group_version, served)
        return None


# --- module helpers ---------------------------------------------------------------------------------


def _verb(method: str, route: _Route, query: dict) -> str:
    if method == "GET":
        if route.name is not None:
            return "get"
        return "watch" if query.get("watch") in ("true", "1") else "list"
    if method == "DELETE":
        return "delete" if route.name else "deletecollection"
    verbs = {"POST": "create", "PUT": "update", "PATCH": "patch"}
    if (
        method not in verbs
        or (method == "POST" and route.name is not None)
        or (method != "POST" and not route.name)
    ):
        raise ApiFailure(405, f"{method} is not allowed here")
    return verbs[method]


def _patched(current: dict, body: object, content_type: str) -> dict:
    kind = content_type.split(";")[0].strip()
    current = copy.deepcopy(current)  # the patches share what they leave untouched
    try:
        if kind == "application/merge-patch+json":
            result = wire.merge_patch(current, body)
        elif kind == "application/strategic-merge-patch+json":
            result = wire.strategic_patch(current, body)
        elif kind == "application/json-patch+json":
            result = wire.json_patch(current, body)  # type: ignore[arg-type]
        else:
            raise ApiFailure(
                415,
                f"the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, "
                f"application/strategic-merge-patch+json (got {kind})",
            )
    except wire.PatchError as error:
        raise ApiFailure(422, str(error)) from None
    if not isinstance(result, dict):
        raise ApiFailure(422, "the patch does not leave an object")
    return result


def _scale_of(obj: dict) -> dict:
    metadata, spec = obj["metadata"], obj.get("spec") or {}
    match_labels = (spec.get("selector") or {}).get("matchLabels") or {}
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: metadata[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in metadata
        },
        "spec": {"replicas": spec.get("replicas", 1)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(match_labels.items())),
        },
    }


def _owned_by(obj: dict, deployment: str) -> bool:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return any(ref.get("kind") == "Deployment" and ref.get("name") == deployment for ref in refs)


def _revision(obj: dict) -> int:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION, "0")
    return int(value) if str(value).isdigit() else 0


def _unhashed(template: dict) -> dict:
    """A pod template without the pod-template-hash label (what makes two revisions the same)."""
    template = copy.deepcopy(template or {})
    labels = (template.get("metadata") or {}).get("labels")
    if labels:
        labels.pop("pod-template-hash", None)
    return template


def _without_hash(replica_set: dict) -> dict:
    return _unhashed((replica_set.get("spec") or {}).get("template") or {})


def _offset(token: str) -> int:
    try:
        return int(base64.urlsafe_b64decode(token.encode()).decode()) if token else 0
    except ValueError:
        raise ApiFailure(410, "the provided continue parameter is too old", "Expired") from None


def _log_text(lines: list[tuple[datetime, str]], query: dict) -> str:
    since = None
    if query.get("sinceSeconds", "").isdigit():
        since = datetime.now(UTC) - timedelta(seconds=int(query["sinceSeconds"]))
    elif query.get("sinceTime"):
        try:
            since = datetime.fromisoformat(query["sinceTime"].replace("Z", "+00:00"))
        except ValueError:
            raise ApiFailure(400, f'parsing time "{query["sinceTime"]}" as RFC 3339 failed') from None
    kept = [(at, line) for at, line in lines if since is None or at >= since]
    if query.get("tailLines", "").isdigit():
        kept = kept[-int(query["tailLines"]) :] if int(query["tailLines"]) else []
    stamp = query.get("timestamps") == "true"
    return "".join(
        f"{at.strftime('%Y-%m-%dT%H:%M:%S.%fZ')} {line}\n" if stamp else f"{line}\n" for at, line in kept
    )


def _group(group: str, served: tuple[wire.Resource, ...]) -> dict:
    versions = sorted({r.version for r in served if r.group == group})
    entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": entries, "preferredVersion": entries[0]}


def _resource_list(group_version: str, served: tuple[wire.Resource, ...]) -> dict:
    resources = []
    for r in (r for r in served if r.api_version == group_version):
        resources.append(
            {
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": r.namespaced,
                "kind": r.kind,
                "verbs": list(r.verbs),
                **({"shortNames": list(r.short_names)} if r.short_names else {}),
            }
        )
        for sub in r.subresources:
            kind = "Scale" if sub == "scale" else r.kind
            verbs = ["get"] if sub == "log" else ["get", "patch", "update"]
            resources.append(
                {
                    "name": f"{r.plural}/{sub}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": kind,
                    "verbs": verbs,
                }
            )
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }


def _user(token: str | None) -> str:
    name = (token or "anonymous").removesuffix("-token")
    return f"system:serviceaccount:ongrid:{name}"


def _bearer(header: str) -> str | None:
    scheme, _, value = header.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def _json_or_none(raw: bytes) -> object:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _json(status: int, payload: object) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(payload).encode()


def _certificates() -> tuple[str, str, str]:
    """A fresh CA and a server certificate it signed for 127.0.0.1 and localhost: (CA PEM,
    server certificate PEM, server key PEM). Made per fake, so no test trusts another's."""
    ca_key, key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("ongrid-fake-kubernetes-ca")
    ca = (
        _builder(ca_name, ca_name, ca_key.public_key(), is_ca=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    names = [x509.DNSName("localhost"), x509.DNSName("kubernetes.default")]
    names.append(x509.IPAddress(ipaddress.ip_address("127.0.0.1")))
    cert = (
        _builder(_name("kube-apiserver"), ca_name, key.public_key(), is_ca=False)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
        .sign(ca_key, hashes.SHA256())
    )
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return ca.public_bytes(pem).decode(), cert.public_bytes(pem).decode(), key_pem.decode()


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, is_ca: bool
) -> x509.CertificateBuilder:
    """A certificate valid from five minutes ago for two days, with the usages its role needs."""
    now = datetime.now(UTC)
    usage = x509.KeyUsage(
        digital_signature=True,
        key_cert_sign=is_ca,
        crl_sign=is_ca,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        encipher_only=False,
        decipher_only=False,
    )
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=0 if is_ca else None), critical=True)
        .add_extension(usage, critical=True)
    )


class _TLSServer(ThreadingHTTPServer):
    """TLS handshakes in each request's thread, so a client that never finishes one (or
    refuses the certificate) does not hold up the others."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type, context: ssl.SSLContext) -> None:
        self.context = context
        super().__init__(address, handler)

    def finish_request(self, request: socket.socket, client_address: tuple[str, int]) -> None:
        request.settimeout(10)
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return  # the client refused our certificate, or went away
        try:
            super().finish_request(tls, client_address)
        finally:
            tls.close()


def _handler(fake: KubernetesFake) -> type:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            self._serve()

        do_POST = do_PATCH = do_PUT = do_DELETE = do_GET  # noqa: N815

        def _serve(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {key.lower(): value for key, value in self.headers.items()}
            status, content_type, body = fake.handle(self.command, self.path, headers, raw)
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError):
                pass  # the client gave up waiting

    return Handler
