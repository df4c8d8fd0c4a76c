"""The fake Kubernetes API server for tests (fakes/kubernetes_api.py), its fixture, a lightkube
client for it, and `seed_payments`: one realistic broken namespace the Kubernetes tests share.

Fixture `kube_api` (import it into the test module: `from tests.support.kubernetes import
kube_api  # noqa: F401 - the fixture`): a started `KubernetesFake` with tokens
- "admin-token": every verb, every namespace (user system:serviceaccount:ongrid:admin);
- "reader-token": get, list, watch only (user system:serviceaccount:ongrid:reader);
metrics-server off (set `kube_api.metrics_server = True` to serve metrics.k8s.io).
`fake.kubeconfig(token)` is a kubeconfig with inline credentials (what an admin pastes).

`seed_payments(fake)` builds (all in namespace "payments" unless said, times relative to now):
- Namespaces "payments" and "default"; Node "node-a", Ready, kubelet v1.31.2.
- ConfigMap "payments-config": data pool_size "five", LOG_LEVEL "info"; managedFields: made by
  "kubectl-create" 3 days ago, its `pool_size` changed by manager "kubectl-edit" 32 minutes ago.
- Deployment "payments-api" (label app=payments-api, 3 replicas, 0 ready, condition Available
  False), container "app", image registry.example.com/payments-api:1.14.2. Its revisions, as
  ReplicaSets owned by it:
  - revision 1, "payments-api-6d9f7c5b8d" (3 days ago, replicas 0): env DB_POOL_SIZE value "20";
  - revision 2, "payments-api-7f8b9c6d4e" (30 minutes ago, replicas 3, 0 ready): env
    DB_POOL_SIZE from configMapKeyRef payments-config/pool_size (the only change).
- Pods PAYMENTS_PODS of revision 2 on node-a: Running, not ready, container "app" waiting in
  CrashLoopBackOff, restartCount 7, lastState.terminated reason Error exitCode 1; their previous
  (and current) log ends with CRASH_LINE 'FATAL config: pool_size "five" is not an integer'.
- Events: per crashing pod a Warning BackOff (count 31, kubelet on node-a) and a Normal Pulled;
  for the deployment a Normal ScalingReplicaSet of revision 2.
- Deployment "ledger" (app=ledger, 2/2 ready, revision 1 ReplicaSet "ledger-5c7d8e9f0a"),
  pods LEDGER_PODS Running and ready, restartCount 0, image registry.example.com/ledger:3.2.0.
- Services "payments-api" and "ledger"; PodMetrics of every pod and NodeMetrics of node-a
  (served only when metrics_server is on).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import lightkube
import pytest
import yaml
from lightkube.config.kubeconfig import KubeConfig

from fakes.kubernetes_api import KubernetesFake, timestamp

READ_ONLY = {"get", "list", "watch"}
NAMESPACE = "payments"
OLD_RS, NEW_RS, LEDGER_RS = "payments-api-6d9f7c5b8d", "payments-api-7f8b9c6d4e", "ledger-5c7d8e9f0a"
PAYMENTS_PODS = (f"{NEW_RS}-2xkqp", f"{NEW_RS}-8mzrt", f"{NEW_RS}-q4vnl")
LEDGER_PODS = (f"{LEDGER_RS}-h7wfz", f"{LEDGER_RS}-tn3cd")
CRASH_LINE = 'FATAL config: pool_size "five" is not an integer'
PAYMENTS_IMAGE = "registry.example.com/payments-api:1.14.2"


@pytest.fixture
def kube_api() -> Iterator[KubernetesFake]:
    """A started fake API server with "admin-token" (all verbs) and "reader-token" (read-only)."""
    with KubernetesFake(tokens={"admin-token": None, "reader-token": set(READ_ONLY)}) as fake:
        yield fake


def client(
    fake: KubernetesFake, token: str = "admin-token", namespace: str = "default"
) -> lightkube.AsyncClient:
    """A lightkube AsyncClient for the fake, trusting its CA, ignoring the environment."""
    config = KubeConfig.from_dict(yaml.safe_load(fake.kubeconfig(token, namespace=namespace)))
    return lightkube.AsyncClient(config=config, trust_env=False)


def _ago(**delta: float) -> str:
    return timestamp(datetime.now(UTC) - timedelta(**delta))


def _template(app: str, image: str, env: list[dict], pod_hash: str = "") -> dict:
    labels = {"app": app, **({"pod-template-hash": pod_hash} if pod_hash else {})}
    container = {
        "name": "app",
        "image": image,
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": env,
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
        "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5},
    }
    return {"metadata": {"labels": labels}, "spec": {"containers": [container], "restartPolicy": "Always"}}


OLD_ENV = [{"name": "DB_POOL_SIZE", "value": "20"}]
NEW_ENV = [
    {
        "name": "DB_POOL_SIZE",
        "valueFrom": {"configMapKeyRef": {"name": "payments-config", "key": "pool_size"}},
    }
]


def seed_payments(fake: KubernetesFake) -> None:
    """Fill `fake` with the payments namespace described in the module docstring."""
    for name in (NAMESPACE, "default"):
        fake.put(
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": name},
                "status": {"phase": "Active"},
            }
        )
    fake.put(_node())
    fake.put(_configmap())
    payments = fake.put(_deployment("payments-api", 3, 0, NEW_ENV, revision=2, age={"days": 3}))
    fake.put(_replica_set(payments, OLD_RS, OLD_ENV, 1, replicas=0, ready=0, age={"days": 3}))
    new_rs = fake.put(_replica_set(payments, NEW_RS, NEW_ENV, 2, replicas=3, ready=0, age={"minutes": 30}))
    ledger = fake.put(
        _deployment(
            "ledger", 2, 2, [], revision=1, age={"days": 12}, image="registry.example.com/ledger:3.2.0"
        )
    )
    ledger_rs = fake.put(
        _replica_set(
            ledger,
            LEDGER_RS,
            [],
            1,
            replicas=2,
            ready=2,
            age={"days": 12},
            image="registry.example.com/ledger:3.2.0",
        )
    )
    for pod in PAYMENTS_PODS:
        fake.put(_crashing_pod(pod, new_rs))
        log = _crash_log()
        fake.set_log(NAMESPACE, pod, log, previous=True)
        fake.set_log(NAMESPACE, pod, log)
        for event in _pod_events(pod):
            fake.put(event)
    for pod in LEDGER_PODS:
        fake.put(_healthy_pod(pod, ledger_rs))
        fake.set_log(
            NAMESPACE, pod, "INFO ledger: listening on :8080\nINFO ledger: reconciled 1204 entries\n"
        )
    fake.put(
        _event(
            "payments-api.scaled",
            "Deployment",
            "payments-api",
            "Normal",
            "ScalingReplicaSet",
            f"Scaled up replica set {NEW_RS} to 3",
            "deployment-controller",
            1,
            {"minutes": 30},
        )
    )
    for name in ("payments-api", "ledger"):
        fake.put(_service(name))
    for pod in PAYMENTS_PODS + LEDGER_PODS:
        fake.put(_pod_metrics(pod))
    fake.put(
        {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "NodeMetrics",
            "metadata": {"name": "node-a"},
            "timestamp": _ago(seconds=20),
            "window": "20s",
            "usage": {"cpu": "612m", "memory": "3104Mi"},
        }
    )


def _node() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": "node-a",
            "labels": {"kubernetes.io/hostname": "node-a"},
            "creationTimestamp": _ago(days=40),
        },
        "spec": {"podCIDR": "10.244.0.0/24"},
        "status": {
            "capacity": {"cpu": "4", "memory": "16310840Ki", "pods": "110"},
            "allocatable": {"cpu": "3800m", "memory": "15208440Ki", "pods": "110"},
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastTransitionTime": _ago(days=40),
                    "lastHeartbeatTime": _ago(seconds=30),
                },
            ],
            "addresses": [
                {"type": "InternalIP", "address": "10.0.0.11"},
                {"type": "Hostname", "address": "node-a"},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.31.2",
                "kubeProxyVersion": "v1.31.2",
                "bootID": "4b1f0c2e-node-a",
                "machineID": "ab12",
                "systemUUID": "ab12",
                "osImage": "Ubuntu 24.04.1 LTS",
                "containerRuntimeVersion": "containerd://1.7.22",
                "kernelVersion": "6.8.0-45-generic",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
        },
    }


def _configmap() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "payments-config",
            "namespace": NAMESPACE,
            "creationTimestamp": _ago(days=3),
            "managedFields": [
                {
                    "manager": "kubectl-create",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": _ago(days=3),
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}, "f:LOG_LEVEL": {}, "f:pool_size": {}}},
                },
                {
                    "manager": "kubectl-edit",
                    "operation": "Update",
                    "apiVersion": "v1",
                    "time": _ago(minutes=32),
                    "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {"f:pool_size": {}}},
                },
            ],
        },
        "data": {"pool_size": "five", "LOG_LEVEL": "info"},
    }


def _deployment(
    name: str, replicas: int, ready: int, env: list, revision: int, age: dict, image: str = PAYMENTS_IMAGE
) -> dict:
    available = ready == replicas
    conditions = [
        {
            "type": "Available",
            "status": "True" if available else "False",
            "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
            "message": "Deployment has minimum availability."
            if available
            else "Deployment does not have minimum availability.",
            "lastTransitionTime": _ago(**age) if available else _ago(minutes=25),
        },
        {
            "type": "Progressing",
            "status": "True",
            "reason": "NewReplicaSetAvailable" if available else "ReplicaSetUpdated",
            "message": f'ReplicaSet "{name}" is progressing.',
            "lastTransitionTime": _ago(minutes=30),
        },
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"app": name},
            "creationTimestamp": _ago(**age),
            "generation": revision,
            "annotations": {"deployment.kubernetes.io/revision": str(revision)},
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            },
            "template": _template(name, image, env),
        },
        "status": {
            "observedGeneration": revision,
            "replicas": replicas,
            "updatedReplicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "unavailableReplicas": replicas - ready,
            "conditions": conditions,
        },
    }


def _replica_set(
    deployment: dict,
    name: str,
    env: list,
    revision: int,
    replicas: int,
    ready: int,
    age: dict,
    image: str = PAYMENTS_IMAGE,
) -> dict:
    app, pod_hash = deployment["metadata"]["name"], name.rsplit("-", 1)[1]
    owner = _controller("Deployment", deployment)
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"app": app, "pod-template-hash": pod_hash},
            "creationTimestamp": _ago(**age),
            "ownerReferences": [owner],
            "annotations": {
                "deployment.kubernetes.io/revision": str(revision),
                "deployment.kubernetes.io/desired-replicas": str(deployment["spec"]["replicas"]),
            },
        },
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": app, "pod-template-hash": pod_hash}},
            "template": _template(app, image, env, pod_hash),
        },
        "status": {
            "replicas": replicas,
            "readyReplicas": ready,
            "availableReplicas": ready,
            "observedGeneration": 1,
        },
    }


def _controller(kind: str, obj: dict) -> dict:
    """The ownerReference a controller of `kind` (apps/v1) stamps on what it creates."""
    metadata = obj["metadata"]
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "name": metadata["name"],
        "uid": metadata["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _pod(name: str, replica_set: dict, image: str, env: list, status: dict, age: dict) -> dict:
    rs_name = replica_set["metadata"]["name"]
    app, pod_hash = rs_name.rsplit("-", 1)
    spec = _template(app, image, env, pod_hash)["spec"]
    owner = _controller("ReplicaSet", replica_set)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"app": app, "pod-template-hash": pod_hash},
            "creationTimestamp": _ago(**age),
            "ownerReferences": [owner],
        },
        "spec": {**spec, "nodeName": "node-a", "serviceAccountName": "default"},
        "status": {
            "podIP": f"10.244.0.{sum(map(ord, name)) % 200 + 10}",
            "hostIP": "10.0.0.11",
            "qosClass": "Burstable",
            "startTime": _ago(**age),
            **status,
        },
    }


def _crashing_pod(name: str, replica_set: dict) -> dict:
    container = {
        "name": "app",
        "image": PAYMENTS_IMAGE,
        "imageID": "registry.example.com/payments-api@sha256:" + "a1" * 32,
        "containerID": "containerd://" + "c7" * 32,
        "ready": False,
        "started": False,
        "restartCount": 7,
        "state": {
            "waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off 5m0s restarting failed container=app pod={name}_{NAMESPACE}(uid)",
            }
        },
        "lastState": {
            "terminated": {
                "exitCode": 1,
                "reason": "Error",
                "startedAt": _ago(minutes=3, seconds=4),
                "finishedAt": _ago(minutes=3),
                "containerID": "containerd://" + "b3" * 32,
            }
        },
    }
    conditions = [
        {
            "type": "Ready",
            "status": "False",
            "reason": "ContainersNotReady",
            "message": "containers with unready status: [app]",
            "lastTransitionTime": _ago(minutes=29),
        },
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": _ago(minutes=30)},
    ]
    status = {"phase": "Running", "conditions": conditions, "containerStatuses": [container]}
    return _pod(name, replica_set, PAYMENTS_IMAGE, NEW_ENV, status, {"minutes": 30})


def _healthy_pod(name: str, replica_set: dict) -> dict:
    container = {
        "name": "app",
        "image": "registry.example.com/ledger:3.2.0",
        "imageID": "registry.example.com/ledger@sha256:" + "d4" * 32,
        "ready": True,
        "started": True,
        "restartCount": 0,
        "state": {"running": {"startedAt": _ago(days=12)}},
        "lastState": {},
    }
    conditions = [
        {"type": "Ready", "status": "True", "lastTransitionTime": _ago(days=12)},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": _ago(days=12)},
    ]
    status = {"phase": "Running", "conditions": conditions, "containerStatuses": [container]}
    return _pod(name, replica_set, "registry.example.com/ledger:3.2.0", [], status, {"days": 12})


def _crash_log() -> str:
    at = datetime.now(UTC) - timedelta(minutes=3, seconds=4)
    lines = ["INFO payments-api 1.14.2 starting", "INFO loading configuration from environment", CRASH_LINE]
    return "\n".join(f"{timestamp(at + timedelta(seconds=i))} {line}" for i, line in enumerate(lines))


def _pod_events(pod: str) -> list[dict]:
    return [
        _event(
            f"{pod}.backoff",
            "Pod",
            pod,
            "Warning",
            "BackOff",
            f"Back-off restarting failed container app in pod {pod}_{NAMESPACE}(uid)",
            "kubelet",
            31,
            {"minutes": 2},
        ),
        _event(
            f"{pod}.pulled",
            "Pod",
            pod,
            "Normal",
            "Pulled",
            f'Container image "{PAYMENTS_IMAGE}" already present on machine',
            "kubelet",
            8,
            {"minutes": 3, "seconds": 5},
        ),
    ]


def _event(
    name: str,
    kind: str,
    target: str,
    kind_of_event: str,
    reason: str,
    message: str,
    component: str,
    count: int,
    last: dict,
) -> dict:
    api_version = "apps/v1" if kind == "Deployment" else "v1"
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": NAMESPACE, "creationTimestamp": _ago(minutes=30)},
        "involvedObject": {"kind": kind, "name": target, "namespace": NAMESPACE, "apiVersion": api_version},
        "type": kind_of_event,
        "reason": reason,
        "message": message,
        "source": {"component": component, **({"host": "node-a"} if component == "kubelet" else {})},
        "count": count,
        "firstTimestamp": _ago(minutes=30),
        "lastTimestamp": _ago(**last),
        "reportingComponent": component,
    }


def _service(name: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name}},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": f"10.96.{len(name)}.20",
            "selector": {"app": name},
            "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}],
        },
    }


def _pod_metrics(pod: str) -> dict:
    crashing = pod.startswith(NEW_RS)
    usage = {"cpu": "0", "memory": "0"} if crashing else {"cpu": "87m", "memory": "214Mi"}
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "PodMetrics",
        "metadata": {"name": pod, "namespace": NAMESPACE, "labels": {"app": pod.rsplit("-", 2)[0]}},
        "timestamp": _ago(seconds=20),
        "window": "20s",
        "containers": [{"name": "app", "usage": usage}],
    }
