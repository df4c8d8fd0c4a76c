"""The Kubernetes read tools against the fake API server (fakes/kubernetes_api.py) through the real
lightkube client: each tool's shape on the seeded payments namespace, the Secrets policy, namespace
restrictions, credentials and transport failures, and tenancy (docs/kubernetes.md)."""

from __future__ import annotations

import base64
import dataclasses
import json

import pytest

from agents_app.toolsets.contract import ToolError
from ops_app.core import egress
from ops_app.models import DataSource
from tests.support.kubernetes import (
    CRASH_LINE,
    LEDGER_PODS,
    NEW_RS,
    OLD_RS,
    PAYMENTS_IMAGE,
    PAYMENTS_PODS,
    kube_api,  # noqa: F401 - the fixture
    seed_payments,
)
from tests.support.tools import run_tool

pytestmark = pytest.mark.django_db
SECRET_VALUE = "s3cr3t-db-password-7f1e"
POD = PAYMENTS_PODS[0]


@pytest.fixture
def payments(kube_api):  # noqa: F811
    seed_payments(kube_api)
    return kube_api


def connect(org, fake, name="prod", token="admin-token", namespaces="", default=True) -> DataSource:
    """The organization's cluster data source pointing at the fake (URL + token + its CA)."""
    return DataSource.objects.create(
        organization=org,
        kind=DataSource.Kind.KUBERNETES,
        name=name,
        url=fake.url,
        auth=DataSource.Auth.BEARER,
        secret=token,
        ca_bundle=fake.ca_pem,
        namespaces=namespaces,
        is_default=default,
    )


def paths(fake) -> list[str]:
    return [r.path for r in fake.requests]


# --- k8s_get --------------------------------------------------------------------------------------


def test_get_pods_shows_the_crash_loop_as_kubectl_does(org, payments):
    connect(org, payments)
    result = run_tool("k8s_get", org, kind="pods", namespace="payments", label_selector="app=payments-api")
    assert (result["cluster"], result["kind"], result["namespace"], result["count"]) == (
        "prod",
        "Pod",
        "payments",
        3,
    )
    row = next(r for r in result["rows"] if r["name"] == POD)
    assert row["status"] == "CrashLoopBackOff"
    assert (row["ready"], row["restarts"], row["node"], row["namespace"]) == ("0/1", 7, "node-a", "payments")
    assert row["reason"] == "Error (exit 1)"
    assert row["age"] == "30m"
    request = payments.requests[-1]
    assert request.path == "/api/v1/namespaces/payments/pods"
    assert request.query["labelSelector"] == "app=payments-api"
    assert "truncated" not in result


def test_get_takes_kubectl_names_in_any_case_and_shapes_each_kind(org, payments):
    connect(org, payments)
    deployments = run_tool("k8s_get", org, kind="Deploy", namespace="payments")
    rows = {r["name"]: r for r in deployments["rows"]}
    assert deployments["kind"] == "Deployment"
    assert rows["payments-api"] | {"age": ""} == {
        "name": "payments-api",
        "namespace": "payments",
        "age": "",
        "ready": "0/3",
        "up_to_date": 3,
        "available": 0,
        "images": [PAYMENTS_IMAGE],
        "revision": "2",
    }
    assert rows["ledger"]["ready"] == "2/2"
    (node,) = run_tool("k8s_get", org, kind="NODES")["rows"]
    assert (node["name"], node["status"], node["roles"], node["version"], node["age"]) == (
        "node-a",
        "Ready",
        "<none>",
        "v1.31.2",
        "40d",
    )
    (config,) = run_tool("k8s_get", org, kind="cm", namespace="payments")["rows"]
    assert config["keys"] == ["LOG_LEVEL", "pool_size"]
    assert config["last_changed_by"].startswith("kubectl-edit at ")
    services = run_tool("k8s_get", org, kind="svc", namespace="payments", name="ledger")
    assert services["rows"][0]["ports"] == ["80/TCP"] and services["count"] == 1
    assert payments.requests[-1].path == "/api/v1/namespaces/payments/services/ledger"
    events = run_tool("k8s_get", org, kind="events", namespace="payments")["rows"]
    assert [e["type"] for e in events[:3]] == ["Warning"] * 3 and events[-1]["type"] == "Normal"


def test_unknown_kinds_list_the_kinds_and_secrets_are_refused(org, payments):
    connect(org, payments)
    with pytest.raises(ToolError) as unknown:
        run_tool("k8s_get", org, kind="gadgets")
    assert "unknown kind 'gadgets'" in str(unknown.value) and "deployment (deploy)" in str(unknown.value)
    for spelling in ("secret", "Secrets"):
        with pytest.raises(ToolError, match="Secrets are never read by Ongrid"):
            run_tool("k8s_get", org, kind=spelling, namespace="payments")
        with pytest.raises(ToolError, match="Secrets are never read by Ongrid"):
            run_tool("k8s_describe", org, kind=spelling, name="payments-db", namespace="payments")
    assert payments.requests == []


def test_a_list_longer_than_the_limit_says_it_was_cut(org, payments):
    connect(org, payments)
    result = run_tool("k8s_get", org, kind="pod", namespace="payments", limit=2)
    assert result["count"] == 2 and len(result["rows"]) == 2
    assert "more than 2 objects" in result["truncated"]


# --- the Secrets policy ---------------------------------------------------------------------------


def test_a_secret_value_never_reaches_any_result(org, payments):
    payments.put(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "payments-db", "namespace": "payments"},
            "data": {"password": base64.b64encode(SECRET_VALUE.encode()).decode()},
        }
    )
    pod = payments.get_object("Pod", POD, "payments")
    pod["spec"]["containers"][0]["env"].append(
        {"name": "DB_PASSWORD", "valueFrom": {"secretKeyRef": {"name": "payments-db", "key": "password"}}}
    )
    pod["spec"]["containers"][0]["envFrom"] = [{"secretRef": {"name": "payments-db"}}]
    payments.put(pod)
    connect(org, payments)
    described = run_tool("k8s_describe", org, kind="pod", name=POD, namespace="payments")
    (container,) = described["summary"]["containers"]
    assert "DB_PASSWORD: from Secret payments-db key password" in container["env"]
    assert "DB_POOL_SIZE: from ConfigMap payments-config key pool_size" in container["env"]
    assert container["env_from"] == ["Secret payments-db"]
    results = [
        described,
        run_tool("k8s_get", org, kind="pods", namespace="payments"),
        run_tool("k8s_events", org, namespace="payments"),
        run_tool("k8s_rollout_history", org, deployment="payments-api", namespace="payments"),
        run_tool("k8s_get", org, kind="configmap", namespace="payments"),
    ]
    text = json.dumps(results)
    assert SECRET_VALUE not in text and base64.b64encode(SECRET_VALUE.encode()).decode() not in text
    assert not [p for p in paths(payments) if "/secrets" in p]


# --- k8s_describe ---------------------------------------------------------------------------------


def test_describe_pod_condenses_what_an_sre_reads(org, payments):
    connect(org, payments)
    result = run_tool("k8s_describe", org, kind="po", name=POD, namespace="payments")
    assert (result["cluster"], result["kind"], result["name"], result["namespace"]) == (
        "prod",
        "Pod",
        POD,
        "payments",
    )
    assert result["owners"] == [f"ReplicaSet/{NEW_RS}", "Deployment/payments-api"]
    summary = result["summary"]
    assert (summary["status"], summary["phase"], summary["node"]) == ("CrashLoopBackOff", "Running", "node-a")
    (container,) = summary["containers"]
    assert (container["image"], container["ready"], container["restarts"]) == (PAYMENTS_IMAGE, False, 7)
    assert container["state"]["state"] == "waiting" and container["state"]["reason"] == "CrashLoopBackOff"
    last = container["last_state"]
    assert (last["state"], last["reason"], last["exit_code"]) == ("terminated", "Error", 1)
    assert last["finished_at"].endswith("Z")
    assert container["requests"] == {"cpu": "250m", "memory": "256Mi"}
    assert container["limits"] == {"memory": "512Mi"}
    assert container["readiness_probe"] == "GET :8080/ready every 5s, fails after 3"
    ready = next(c for c in summary["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "False" and "unready" in ready["message"]
    reasons = [(e["type"], e["reason"], e["count"]) for e in result["events"]]
    assert reasons == [("Warning", "BackOff", 31), ("Normal", "Pulled", 8)]


def test_describe_deployment_and_configmap(org, payments):
    connect(org, payments)
    deployment = run_tool("k8s_describe", org, kind="deployment", name="payments-api", namespace="payments")
    summary = deployment["summary"]
    assert summary["replicas"] == {"desired": 3, "updated": 3, "ready": 0, "available": 0, "unavailable": 3}
    assert summary["revision"] == "2" and summary["selector"] == {"app": "payments-api"}
    assert summary["strategy"] == "RollingUpdate (max surge 25%, max unavailable 25%)"
    available = next(c for c in summary["conditions"] if c["type"] == "Available")
    assert (available["status"], available["reason"]) == ("False", "MinimumReplicasUnavailable")
    assert summary["containers"][0]["env"] == ["DB_POOL_SIZE: from ConfigMap payments-config key pool_size"]
    assert [e["reason"] for e in deployment["events"]] == ["ScalingReplicaSet"]
    assert deployment["owners"] == []
    config = run_tool("k8s_describe", org, kind="configmap", name="payments-config", namespace="payments")
    assert config["summary"]["data"] == {"LOG_LEVEL": "info", "pool_size": "five"}
    assert config["summary"]["last_changed_by"].startswith("kubectl-edit at ")
    assert [m["manager"] for m in config["summary"]["managers"]] == ["kubectl-create", "kubectl-edit"]
    node = run_tool("k8s_describe", org, kind="node", name="node-a")
    assert (node["namespace"], node["summary"]["status"], node["summary"]["allocatable"]["cpu"]) == (
        None,
        "Ready",
        "3800m",
    )
    with pytest.raises(ToolError, match="give the namespace"):
        run_tool("k8s_describe", org, kind="pod", name=POD)
    with pytest.raises(ToolError, match="HTTP 404"):
        run_tool("k8s_describe", org, kind="pod", name="nope", namespace="payments")


# --- k8s_events -----------------------------------------------------------------------------------


def test_events_warning_first_per_object_and_in_the_window(org, payments):
    connect(org, payments)
    result = run_tool("k8s_events", org, namespace="payments")
    assert (result["cluster"], result["namespace"]) == ("prod", "payments")
    events = result["events"]
    assert [e["type"] for e in events] == ["Warning"] * 3 + ["Normal"] * 4
    assert set(events[0]) == {"type", "reason", "object", "message", "count", "first_seen", "last_seen"}
    assert events[0]["object"].startswith("Pod/") and events[0]["count"] == 31
    assert events[-1]["reason"] == "ScalingReplicaSet"  # the oldest Normal one last
    one = run_tool("k8s_events", org, namespace="payments", kind="pods", name=POD)["events"]
    assert [(e["object"], e["reason"]) for e in one] == [(f"Pod/{POD}", "BackOff"), (f"Pod/{POD}", "Pulled")]
    of_deployments = run_tool("k8s_events", org, namespace="payments", kind="deploy")["events"]
    assert [e["object"] for e in of_deployments] == ["Deployment/payments-api"]
    recent = run_tool("k8s_events", org, namespace="payments", since="now-150s")["events"]
    assert {e["reason"] for e in recent} == {"BackOff"}
    warnings = run_tool("k8s_events", org, namespace="payments", warnings_only=True)["events"]
    assert {e["type"] for e in warnings} == {"Warning"}
    with pytest.raises(ToolError, match="since: 'soonish' is not a time"):
        run_tool("k8s_events", org, namespace="payments", since="soonish")


# --- k8s_logs -------------------------------------------------------------------------------------


def test_previous_logs_carry_the_crash(org, payments):
    connect(org, payments)
    result = run_tool("k8s_logs", org, pod=POD, namespace="payments", previous=True)
    assert (result["cluster"], result["pod"], result["container"], result["previous"]) == (
        "prod",
        POD,
        "app",
        True,
    )
    assert result["lines"].splitlines()[-1] == CRASH_LINE
    assert (result["line_count"], result["truncated"]) == (3, False) and "note" not in result
    request = payments.requests[-1]
    assert request.path == f"/api/v1/namespaces/payments/pods/{POD}/log"
    assert request.query["previous"] == "true" and request.query["tailLines"] == "200"
    assert request.query["container"] == "app"
    with pytest.raises(ToolError, match="container 'app' has no previous instance"):
        run_tool("k8s_logs", org, pod=LEDGER_PODS[0], namespace="payments", previous=True)
    with pytest.raises(ToolError, match="no container 'sidecar'"):
        run_tool("k8s_logs", org, pod=POD, namespace="payments", container="sidecar")


def test_a_long_log_keeps_its_end_with_a_note(org, payments, settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, tool_result_limit=2500)
    lines = [f"INFO request {i} served in 12ms" for i in range(400)] + [CRASH_LINE]
    payments.set_log("payments", LEDGER_PODS[0], "\n".join(lines))
    connect(org, payments)
    result = run_tool("k8s_logs", org, pod=LEDGER_PODS[0], namespace="payments", tail_lines=2000)
    assert result["truncated"] is True and len(result["lines"]) <= 1000
    assert result["lines"].endswith(CRASH_LINE)
    assert "INFO request 0 served" not in result["lines"]
    assert f"of {len(lines)} lines" in result["note"] and result["line_count"] < len(lines)
    assert len(json.dumps(result)) < 2500


# --- k8s_rollout_history --------------------------------------------------------------------------


def test_rollout_history_names_the_configmap_reference_that_changed(org, payments):
    connect(org, payments)
    result = run_tool("k8s_rollout_history", org, deployment="payments-api", namespace="payments")
    assert (result["cluster"], result["deployment"], result["current_revision"]) == (
        "prod",
        "payments-api",
        2,
    )
    newest, oldest = result["revisions"]
    assert (newest["revision"], newest["replicaset"], newest["replicas"]) == (2, NEW_RS, 3)
    assert (oldest["revision"], oldest["replicaset"], oldest["replicas"]) == (1, OLD_RS, 0)
    assert newest["images"] == [PAYMENTS_IMAGE] and newest["created"] > oldest["created"]
    assert newest["changes"] == [
        "container app: env DB_POOL_SIZE changed: 20 → from ConfigMap payments-config key pool_size",
        "config reference added: ConfigMap payments-config",
    ]
    assert oldest["changes"] == ["first revision"]
    ledger = run_tool("k8s_rollout_history", org, deployment="ledger", namespace="payments")
    assert [r["replicaset"] for r in ledger["revisions"]] == ["ledger-5c7d8e9f0a"]


# --- k8s_top --------------------------------------------------------------------------------------


def test_top_without_metrics_server_says_so(org, payments):
    connect(org, payments)
    result = run_tool("k8s_top", org, kind="pod", namespace="payments")
    assert result["status"] == "unavailable"
    assert "metrics-server is not installed on cluster prod" in result["message"]
    payments.metrics_server = payments.metrics_unavailable = True
    down = run_tool("k8s_top", org, kind="node")
    assert down["status"] == "unavailable" and "registered but not answering" in down["message"]


def test_top_pods_and_nodes(org, payments):
    payments.metrics_server = True
    connect(org, payments)
    result = run_tool("k8s_top", org, kind="pod", namespace="payments", label_selector="app=ledger")
    assert result["kind"] == "pod" and len(result["rows"]) == 2
    assert result["rows"][0] == {
        "name": LEDGER_PODS[0],
        "namespace": "payments",
        "cpu": "87m",
        "memory": "214Mi",
        "cpu_limit": "none",
        "memory_limit": "512Mi",
    }
    everywhere = run_tool("k8s_top", org, kind="pod")  # an unrestricted cluster: one call for all
    assert {row["name"] for row in everywhere["rows"]} >= {*LEDGER_PODS, *PAYMENTS_PODS}
    assert any(r.path == "/apis/metrics.k8s.io/v1beta1/pods" for r in payments.requests)
    (node,) = run_tool("k8s_top", org, kind="node")["rows"]
    assert (node["name"], node["cpu"], node["memory"]) == ("node-a", "612m", "3104Mi")
    assert (node["cpu_percent"], node["memory_percent"]) == (16, 20)


# --- namespaces, credentials, failures ------------------------------------------------------------


def test_a_restricted_cluster_refuses_other_namespaces_and_lists_only_its_own(org, payments):
    connect(org, payments, namespaces="payments")
    with pytest.raises(ToolError) as refused:
        run_tool("k8s_get", org, kind="pods", namespace="kube-system")
    assert "namespace 'kube-system' is not allowed on cluster 'prod' (allowed: payments)" in str(
        refused.value
    )
    for call in (
        lambda: run_tool("k8s_logs", org, pod="x", namespace="kube-system"),
        lambda: run_tool("k8s_rollout_history", org, deployment="x", namespace="default"),
        lambda: run_tool("k8s_describe", org, kind="pod", name="x", namespace="default"),
    ):
        with pytest.raises(ToolError, match="is not allowed"):
            call()
    assert payments.requests == []
    result = run_tool("k8s_get", org, kind="pods")
    assert result["namespace"] == "all" and result["count"] == 5
    assert paths(payments) == ["/api/v1/namespaces/payments/pods"]


def test_an_unrestricted_cluster_lists_all_namespaces_in_one_call(org, payments):
    connect(org, payments)
    result = run_tool("k8s_get", org, kind="deployments")
    assert result["namespace"] == "all" and result["count"] == 2
    assert paths(payments) == ["/apis/apps/v1/deployments"]


def test_a_read_only_token_reads_and_a_refusal_carries_the_api_servers_message(org, payments):
    connect(org, payments, token="reader-token")
    assert run_tool("k8s_get", org, kind="pods", namespace="payments")["count"] == 5
    payments.tokens["get-only-token"] = {"get"}
    DataSource.objects.filter(organization=org).update(secret="")
    source = DataSource.objects.get(organization=org)
    source.secret = "get-only-token"
    source.save()
    with pytest.raises(ToolError) as refused:
        run_tool("k8s_get", org, kind="pods", namespace="payments")
    message = str(refused.value)
    assert (
        message.startswith("cluster 'prod' returned HTTP 403: ") and 'cannot list resource "pods"' in message
    )
    assert "get-only-token" not in message
    described = run_tool("k8s_describe", org, kind="pod", name=POD, namespace="payments")
    assert described["owners"] == [f"ReplicaSet/{NEW_RS}", "Deployment/payments-api"]
    assert described["events"] == [] and "HTTP 403" in described["events_unavailable"]


def test_a_bad_token_is_a_clear_error_without_the_token(org, payments):
    connect(org, payments, token="stolen-or-expired-token")
    with pytest.raises(ToolError) as refused:
        run_tool("k8s_get", org, kind="pods", namespace="payments")
    message = str(refused.value)
    assert "HTTP 401 (the token is not accepted" in message
    assert "stolen-or-expired-token" not in message


def test_unknown_cluster_lists_the_clusters_and_none_is_not_configured(org, other_org, payments):
    connect(org, payments, name="prod")
    connect(org, payments, name="staging", default=False)
    with pytest.raises(ToolError) as unknown:
        run_tool("k8s_get", org, kind="pods", cluster="qa")
    assert "no cluster named 'qa'" in str(unknown.value) and "prod, staging" in str(unknown.value)
    assert (
        run_tool("k8s_get", org, kind="pods", namespace="payments", cluster="staging")["cluster"] == "staging"
    )
    for tool, arguments in (
        ("k8s_get", {"kind": "pods"}),
        ("k8s_describe", {"kind": "pod", "name": POD, "namespace": "payments"}),
        ("k8s_events", {}),
        ("k8s_logs", {"pod": POD, "namespace": "payments"}),
        ("k8s_rollout_history", {"deployment": "payments-api", "namespace": "payments"}),
        ("k8s_top", {"kind": "node"}),
    ):
        assert run_tool(tool, other_org, **arguments)["status"] == "not_configured", tool


def test_another_organization_never_reaches_the_cluster(org, other_org, payments):
    connect(org, payments, name="prod")
    assert run_tool("k8s_get", org, kind="pods", namespace="payments")["count"] == 5
    payments.clear()
    with pytest.raises(ToolError, match="no cluster named 'prod'"):
        run_tool("k8s_get", other_org, kind="pods", namespace="payments", cluster="prod")
    assert payments.requests == []


def test_a_hanging_or_refused_cluster_is_a_tool_error(org, payments, settings):
    source = connect(org, payments)
    DataSource.objects.filter(pk=source.pk).update(timeout=0.5)
    payments.hang_next(3)
    with pytest.raises(ToolError, match=r"cluster 'prod' did not answer within 0.5 s"):
        run_tool("k8s_get", org, kind="pods", namespace="payments")
    settings.CONFIG = dataclasses.replace(settings.CONFIG, egress_allow=egress.AllowList())
    with pytest.raises(ToolError) as refused:
        run_tool("k8s_get", org, kind="pods", namespace="payments")
    assert "is refused by the egress policy" in str(refused.value)


def test_a_pasted_kubeconfig_connects_and_an_unusable_one_says_why(org, payments):
    source = connect(org, payments, token="")
    DataSource.objects.filter(pk=source.pk).update(
        url="", ca_bundle="", kubeconfig=payments.kubeconfig("reader-token")
    )
    assert run_tool("k8s_get", org, kind="deploy", namespace="payments")["count"] == 2
    assert {r.token for r in payments.requests} == {"reader-token"}
    exec_user = payments.kubeconfig("reader-token").replace("token: reader-token", "exec: {command: /bin/sh}")
    DataSource.objects.filter(pk=source.pk).update(kubeconfig=exec_user)
    with pytest.raises(
        ToolError, match="the cluster's kubeconfig cannot be used: the user's `exec` is refused"
    ):
        run_tool("k8s_get", org, kind="pods", namespace="payments")
