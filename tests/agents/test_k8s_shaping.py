"""The rows, describes and revision diffs of the Kubernetes read tools on the objects of the other
failure scenarios (OOMKilled, ImagePullBackOff, a failing readiness probe, an HPA at its maximum,
a NotReady node): what `kubectl get` would print, from the API's own dicts."""

from __future__ import annotations

import datetime as dt

import pytest

from agents_app.toolsets.contract import ToolError
from agents_app.toolsets.kubernetes import describe, history, kinds, selectors, shaping
from ops_app.core.timeutil import iso

NOW = dt.datetime.now(dt.UTC)


def ago(**delta) -> str:
    return iso(NOW - dt.timedelta(**delta))


def pod(state: dict, last: dict | None = None, *, phase="Running", restarts=0, ready=False, **meta) -> dict:
    status = {"name": "app", "ready": ready, "restartCount": restarts, "state": state}
    if last:
        status["lastState"] = last
    return {
        "metadata": {"name": "p", "namespace": "shop", "creationTimestamp": ago(hours=3), **meta},
        "spec": {"containers": [{"name": "app", "image": "shop:1"}], "nodeName": "n1"},
        "status": {"phase": phase, "containerStatuses": [status]},
    }


@pytest.mark.parametrize(
    ("obj", "status"),
    [
        (pod({"terminated": {"reason": "OOMKilled", "exitCode": 137}}, restarts=4), "OOMKilled"),
        (pod({"waiting": {"reason": "ImagePullBackOff"}}, phase="Pending"), "ImagePullBackOff"),
        (pod({"waiting": {"reason": "CrashLoopBackOff"}}), "CrashLoopBackOff"),
        (pod({"running": {}}, ready=True), "Running"),
        (pod({"terminated": {"reason": "Completed", "exitCode": 0}}, phase="Succeeded"), "Completed"),
        (pod({"terminated": {"exitCode": 2}}), "ExitCode:2"),
        (pod({"running": {}}, deletionTimestamp=ago(seconds=5)), "Terminating"),
        (
            {
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "a"}]},
                "status": {"phase": "Pending"},
            },
            "Pending",
        ),
    ],
)
def test_pod_status_is_kubectls(obj, status):
    assert shaping.pod_status(obj) == status


def test_an_oom_killed_pod_row_names_the_last_termination():
    row = shaping.pod_row(
        pod(
            {"waiting": {"reason": "CrashLoopBackOff"}},
            {"terminated": {"reason": "OOMKilled", "exitCode": 137}},
            restarts=5,
        )
    )
    assert row == {
        "name": "p",
        "namespace": "shop",
        "age": "3h",
        "status": "CrashLoopBackOff",
        "ready": "0/1",
        "restarts": 5,
        "node": "n1",
        "reason": "OOMKilled (exit 137)",
    }


def test_ages_read_as_kubectl_prints_them():
    ages = [shaping.age(ago(seconds=s), NOW) for s in (40, 125, 3 * 3600 + 30, 5 * 86400 + 30)]
    assert ages == ["40s", "2m", "3h", "5d"]
    assert shaping.age(None) == ""


def test_a_not_ready_node_with_disk_pressure_and_its_taints():
    node = {
        "metadata": {
            "name": "n2",
            "labels": {"node-role.kubernetes.io/worker": ""},
            "creationTimestamp": ago(days=9),
        },
        "spec": {
            "unschedulable": True,
            "taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}],
        },
        "status": {
            "conditions": [
                {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"},
                {"type": "DiskPressure", "status": "True"},
                {"type": "MemoryPressure", "status": "False"},
            ],
            "nodeInfo": {"kubeletVersion": "v1.30.1"},
            "allocatable": {"cpu": "2"},
        },
    }
    row = shaping.node_row(node)
    assert (row["status"], row["roles"], row["version"], row["age"]) == (
        "NotReady,DiskPressure,SchedulingDisabled",
        "worker",
        "v1.30.1",
        "9d",
    )
    summary = describe.node_summary(node)
    assert summary["taints"] == ["node.kubernetes.io/not-ready:NoExecute"]
    assert summary["conditions"][0] == {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}


def test_an_hpa_at_its_maximum():
    hpa = {
        "metadata": {"name": "web", "namespace": "shop", "creationTimestamp": ago(days=2)},
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 10,
            "metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"averageUtilization": 70}}},
                {"type": "Resource", "resource": {"name": "memory", "target": {"averageValue": "500Mi"}}},
            ],
        },
        "status": {
            "currentReplicas": 10,
            "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 96}}}
            ],
        },
    }
    row = shaping.hpa_row(hpa)
    assert (row["reference"], row["min"], row["max"], row["replicas"]) == ("Deployment/web", 2, 10, 10)
    assert row["targets"] == ["cpu: 96%/70%", "memory: <unknown>/500Mi"]


def container(**fields) -> dict:
    return {"name": "app", "image": "shop:1", **fields}


def template(*containers: dict, volumes=()) -> dict:
    return {"containers": list(containers), "volumes": list(volumes)}


def test_revision_diffs_name_image_limits_probe_command_and_references():
    before = template(
        container(
            resources={"limits": {"memory": "512Mi"}},
            readinessProbe={"httpGet": {"path": "/ready", "port": 8080}},
            env=[{"name": "MODE", "value": "a"}, {"name": "OLD", "value": "x"}],
        ),
        volumes=[{"name": "cfg", "configMap": {"name": "shop-v1"}}],
    )
    after = template(
        container(
            image="shop:1.1-typo",
            resources={"limits": {"memory": "128Mi"}, "requests": {"cpu": "100m"}},
            readinessProbe={"httpGet": {"path": "/healthz", "port": 8081}, "failureThreshold": 1},
            command=["/shop", "--fast"],
            env=[
                {"name": "MODE", "value": "b"},
                {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "shop-api", "key": "token"}}},
            ],
            envFrom=[{"configMapRef": {"name": "shop-env"}}],
        ),
        volumes=[{"name": "cfg", "configMap": {"name": "shop-v2"}}],
    )
    assert history.changes(before, after) == [
        "container app: image shop:1 → shop:1.1-typo",
        "container app: env TOKEN added (from Secret shop-api key token)",
        "container app: env OLD removed (was x)",
        "container app: env MODE changed: a → b",
        "container app: envFrom added: ConfigMap shop-env",
        "container app: requests.cpu unset → 100m",
        "container app: limits.memory 512Mi → 128Mi",
        "container app: readiness probe GET :8080/ready every 10s, fails after 3 → "
        "GET :8081/healthz every 10s, fails after 1",
        "container app: command unset → /shop --fast",
        "config reference removed: ConfigMap shop-v1",
        "config reference added: ConfigMap shop-env",
        "config reference added: ConfigMap shop-v2",
        "config reference added: Secret shop-api",
    ]
    assert history.changes(before, before) == [
        "no change to the pod template's containers (e.g. a rollout restart or a label)"
    ]


def test_revisions_keep_to_the_deployments_own_replicasets_newest_first():
    deployment = {"metadata": {"name": "web", "uid": "u1", "annotations": {shaping.REVISION: "3"}}}

    def replicaset(name, revision, uid="u1", image="shop:1"):
        return {
            "metadata": {
                "name": name,
                "annotations": {shaping.REVISION: str(revision)},
                "ownerReferences": [{"kind": "Deployment", "name": "web", "uid": uid}],
                "creationTimestamp": ago(hours=10 - revision),
            },
            "spec": {"template": {"spec": template(container(image=image))}},
        }

    found = history.revisions(
        deployment,
        [replicaset("web-b", 3, image="shop:2"), replicaset("web-a", 1), replicaset("other", 2, uid="u9")],
    )
    assert [(r["revision"], r["replicaset"]) for r in found] == [(3, "web-b"), (1, "web-a")]
    assert found[0]["changes"] == ["container app: image shop:1 → shop:2"]


def test_kind_names_and_selectors():
    assert kinds.kind_of("HPA").name == "HorizontalPodAutoscaler"
    assert kinds.kind_of("deployments.apps").name == "Deployment"
    assert not kinds.kind_of("nodes").namespaced and kinds.kind_of("po").namespaced
    with pytest.raises(ToolError, match="Secrets are never read"):
        kinds.kind_of(" SECRET ")
    pairs = selectors.parse("app=web, tier!=cache,env in (a, b),!canary,track")
    assert [(key, op.encode(key)) for key, op in pairs] == [
        ("app", "app=web"),
        ("tier", "tier!=cache"),
        ("env", "env in (a,b)"),
        ("canary", "!canary"),
        ("track", "track"),
    ]
    assert selectors.parse("") is None
    with pytest.raises(ToolError, match="field_selector: cannot read 'status.phase in"):
        selectors.parse("status.phase in (Running)", fields=True)


def test_configmap_values_are_cut():
    summary = describe.configmap_summary({"metadata": {}, "data": {"big": "x" * 900}})
    assert summary["data"]["big"] == "x" * 500 + "… [cut: 900 characters]"
