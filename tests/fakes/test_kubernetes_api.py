"""The fake Kubernetes API server (fakes/kubernetes_api.py), driven through lightkube's AsyncClient
as the Kubernetes tools drive a real cluster: if the fake drifts from the wire format the client
expects, these fail before the tool tests built on it give confusing answers."""

from __future__ import annotations

import ssl
from datetime import UTC, datetime, timedelta

import httpx2
import lightkube
import pytest
import yaml
from lightkube import ApiError
from lightkube.config.kubeconfig import KubeConfig
from lightkube.models.authorization_v1 import ResourceAttributes, SelfSubjectAccessReviewSpec
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apps_v1 import Deployment, DeploymentScale, ReplicaSet
from lightkube.resources.authorization_v1 import SelfSubjectAccessReview
from lightkube.resources.core_v1 import ConfigMap, Event, Namespace, Node, Pod, Service
from lightkube.types import PatchType

# lightkube keeps one class per kind: the metrics resources are the tools' own (a second
# declaration with other verbs is refused).
from agents_app.toolsets.kubernetes.usage import NodeMetrics, PodMetrics
from fakes.kubernetes_api import REVISION, KubernetesFake
from ops_app.core import kubeconfig
from tests.support.kubernetes import (
    CRASH_LINE,
    LEDGER_PODS,
    NAMESPACE,
    NEW_RS,
    OLD_RS,
    PAYMENTS_PODS,
    client,
    kube_api,  # noqa: F401 - the fixture
    seed_payments,
)

RESTART = {"spec": {"template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "now"}}}}}


@pytest.fixture
def seeded(kube_api: KubernetesFake) -> KubernetesFake:  # noqa: F811 - the fixture
    seed_payments(kube_api)
    kube_api.clear()
    return kube_api


def _raw(fake: KubernetesFake, token: str = "admin-token") -> httpx2.AsyncClient:
    """A plain HTTP client trusting the fake's CA, for what lightkube has no method for."""
    context = ssl.create_default_context(cadata=fake.ca_pem)
    return httpx2.AsyncClient(base_url=fake.url, verify=context, headers={"Authorization": f"Bearer {token}"})


async def _names(iterable) -> list[str]:
    return [obj.metadata.name async for obj in iterable]


async def test_lists_pods_by_label_and_field_selectors(seeded: KubernetesFake) -> None:
    kube = client(seeded)
    assert await _names(kube.list(Pod, namespace=NAMESPACE, labels={"app": "payments-api"})) == list(
        PAYMENTS_PODS
    )
    assert await _names(kube.list(Pod, namespace=NAMESPACE, labels={"app": ["ledger"]})) == list(LEDGER_PODS)
    not_payments = kube.list(
        Pod, namespace="*", labels={"app": lightkube.operators.not_equal("payments-api")}
    )
    assert await _names(not_payments) == list(LEDGER_PODS)
    assert await _names(kube.list(Pod, namespace=NAMESPACE, labels={"tier": None})) == []
    by_field = kube.list(
        Pod, namespace=NAMESPACE, fields={"metadata.name": PAYMENTS_PODS[1], "spec.nodeName": "node-a"}
    )
    assert await _names(by_field) == [PAYMENTS_PODS[1]]
    assert await _names(kube.list(Pod, namespace="default")) == []
    assert seeded.requests[-1].path == "/api/v1/namespaces/default/pods"


async def test_label_selector_grammar_on_the_wire(seeded: KubernetesFake) -> None:
    async with _raw(seeded) as raw:
        answer = await raw.get(
            "/api/v1/pods", params={"labelSelector": "app in (ledger, payments-api),!tier"}
        )
        assert answer.json()["kind"] == "PodList"
        assert len(answer.json()["items"]) == 5
        answer = await raw.get(
            "/api/v1/pods", params={"labelSelector": "app notin (ledger),app==payments-api"}
        )
        assert [i["metadata"]["name"] for i in answer.json()["items"]] == list(PAYMENTS_PODS)
        refused = await raw.get("/api/v1/pods", params={"fieldSelector": "spec.image=x"})
        assert (
            refused.status_code == 400
            and refused.json()["message"] == "field label not supported: spec.image"
        )


async def test_events_of_one_object_and_warnings(seeded: KubernetesFake) -> None:
    kube = client(seeded)
    fields = {"involvedObject.kind": "Pod", "involvedObject.name": PAYMENTS_PODS[0], "type": "Warning"}
    events = [e async for e in kube.list(Event, namespace=NAMESPACE, fields=fields)]
    assert [(e.reason, e.count) for e in events] == [("BackOff", 31)]


async def test_list_pages_follow_continue(seeded: KubernetesFake) -> None:
    names = await _names(client(seeded).list(Pod, namespace=NAMESPACE, chunk_size=2))
    assert sorted(names) == sorted(PAYMENTS_PODS + LEDGER_PODS)
    pages = [r for r in seeded.requests if r.path.endswith("/pods")]
    assert len(pages) == 3 and "continue" not in pages[0].query and "continue" in pages[2].query


async def test_get_a_deployment_and_a_missing_pod(seeded: KubernetesFake) -> None:
    kube = client(seeded, token="reader-token")
    deployment = await kube.get(Deployment, "payments-api", namespace=NAMESPACE)
    assert deployment.spec.replicas == 3 and deployment.metadata.annotations[REVISION] == "2"
    assert deployment.metadata.uid and int(deployment.metadata.resourceVersion) > 0
    node = await kube.get(Node, "node-a")
    assert [c.status for c in node.status.conditions if c.type == "Ready"] == ["True"]
    with pytest.raises(ApiError) as missing:
        await kube.get(Pod, "nope", namespace=NAMESPACE)
    assert (missing.value.status.code, missing.value.status.reason) == (404, "NotFound")
    assert missing.value.status.message == 'pods "nope" not found'


async def test_crashing_pods_and_configmap_history(seeded: KubernetesFake) -> None:
    kube = client(seeded)
    pod = await kube.get(Pod, PAYMENTS_PODS[0], namespace=NAMESPACE)
    status = pod.status.containerStatuses[0]
    assert status.state.waiting.reason == "CrashLoopBackOff" and status.restartCount == 7
    assert (status.lastState.terminated.reason, status.lastState.terminated.exitCode) == ("Error", 1)
    config = await kube.get(ConfigMap, "payments-config", namespace=NAMESPACE)
    assert config.data["pool_size"] == "five"
    assert [f.manager for f in config.metadata.managedFields] == ["kubectl-create", "kubectl-edit"]


async def test_logs_tail_and_previous(seeded: KubernetesFake) -> None:
    lines = [line async for line in client(seeded).log(PAYMENTS_PODS[0], namespace=NAMESPACE, tail_lines=1)]
    assert lines == [CRASH_LINE + "\n"]
    async with _raw(seeded) as raw:
        path = f"/api/v1/namespaces/{NAMESPACE}/pods/{PAYMENTS_PODS[0]}/log"
        previous = await raw.get(path, params={"previous": "true", "container": "app", "timestamps": "true"})
        assert previous.status_code == 200 and previous.text.endswith(f"Z {CRASH_LINE}\n")
        assert len(previous.text.splitlines()) == 3
        recent = await raw.get(path, params={"previous": "true", "sinceSeconds": "60"})
        assert recent.text == ""
        since = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert len((await raw.get(path, params={"sinceTime": since})).text.splitlines()) == 3
        assert (await raw.get(path, params={"sinceTime": "yesterday"})).status_code == 400
        ledger = f"/api/v1/namespaces/{NAMESPACE}/pods/{LEDGER_PODS[0]}/log"
        none = await raw.get(ledger, params={"previous": "true"})
        assert none.status_code == 400
        assert (
            none.json()["message"]
            == f'previous terminated container "app" in pod "{LEDGER_PODS[0]}" not found'
        )
        wrong = await raw.get(path, params={"container": "sidecar"})
        assert wrong.status_code == 400 and "sidecar is not valid" in wrong.json()["message"]


async def test_unauthenticated_requests_get_401(seeded: KubernetesFake) -> None:
    with pytest.raises(ApiError) as unknown:
        await client(seeded, token="stolen").get(Pod, PAYMENTS_PODS[0], namespace=NAMESPACE)
    assert (unknown.value.status.code, unknown.value.status.reason) == (401, "Unauthorized")
    async with httpx2.AsyncClient(
        base_url=seeded.url, verify=ssl.create_default_context(cadata=seeded.ca_pem)
    ) as raw:
        assert (await raw.get("/api/v1/pods")).status_code == 401
        assert (await raw.get("/version")).json()["gitVersion"] == "v1.31.2"


async def test_read_only_token_cannot_patch(seeded: KubernetesFake) -> None:
    kube = client(seeded, token="reader-token")
    with pytest.raises(ApiError) as refused:
        await kube.patch(Deployment, "payments-api", RESTART, namespace=NAMESPACE)
    assert (refused.value.status.code, refused.value.status.reason) == (403, "Forbidden")
    assert refused.value.status.message == (
        'deployments.apps "payments-api" is forbidden: User "system:serviceaccount:ongrid:reader" cannot '
        'patch resource "deployments" in API group "apps" in the namespace "payments"'
    )
    assert (
        seeded.get_object("Deployment", "payments-api", NAMESPACE)["metadata"]["annotations"][REVISION] == "2"
    )
    assert [(w.method, w.token) for w in seeded.writes()] == [("PATCH", "reader-token")]


async def test_dry_run_changes_nothing_and_a_real_patch_makes_a_revision(seeded: KubernetesFake) -> None:
    kube = client(seeded)
    before = seeded.get_object("Deployment", "payments-api", NAMESPACE)
    would_be = await kube.patch(Deployment, "payments-api", RESTART, namespace=NAMESPACE, dry_run=True)
    assert would_be.spec.template.metadata.annotations == {"kubectl.kubernetes.io/restartedAt": "now"}
    assert seeded.get_object("Deployment", "payments-api", NAMESPACE) == before
    assert seeded.requests[-1].dry_run and seeded.writes() == []
    assert len(seeded.objects("ReplicaSet", NAMESPACE)) == 3

    patched = await kube.patch(Deployment, "payments-api", RESTART, namespace=NAMESPACE)
    assert int(patched.metadata.resourceVersion) > int(before["metadata"]["resourceVersion"])
    assert patched.metadata.generation == before["metadata"]["generation"] + 1
    revisions = await _revisions(kube)
    assert list(revisions.values()) == ["1", "2", "3"] and list(revisions)[:2] == [OLD_RS, NEW_RS]
    new_rs = await kube.get(ReplicaSet, list(revisions)[2], namespace=NAMESPACE)
    assert new_rs.metadata.ownerReferences[0].name == "payments-api"
    assert new_rs.spec.template.metadata.annotations == {"kubectl.kubernetes.io/restartedAt": "now"}
    assert new_rs.spec.replicas == 3
    assert (await kube.get(ReplicaSet, NEW_RS, namespace=NAMESPACE)).spec.replicas == 0
    assert (await kube.get(Deployment, "payments-api", namespace=NAMESPACE)).metadata.annotations[
        REVISION
    ] == "3"


async def _revisions(kube: lightkube.AsyncClient) -> dict[str, str]:
    sets = [rs async for rs in kube.list(ReplicaSet, namespace=NAMESPACE, labels={"app": "payments-api"})]
    ordered = sorted(sets, key=lambda rs: int(rs.metadata.annotations[REVISION]))
    return {rs.metadata.name: rs.metadata.annotations[REVISION] for rs in ordered}


async def test_undo_to_an_old_template_reuses_its_replica_set(seeded: KubernetesFake) -> None:
    kube = client(seeded)
    old = await kube.get(ReplicaSet, OLD_RS, namespace=NAMESPACE)
    template = old.spec.template.to_dict()
    del template["metadata"]["labels"]["pod-template-hash"]
    undo = [{"op": "replace", "path": "/spec/template", "value": template}]
    await kube.patch(Deployment, "payments-api", undo, namespace=NAMESPACE, patch_type=PatchType.JSON)
    assert await _revisions(kube) == {NEW_RS: "2", OLD_RS: "3"}
    env = (
        (await kube.get(Deployment, "payments-api", namespace=NAMESPACE)).spec.template.spec.containers[0].env
    )
    assert [(e.name, e.value) for e in env] == [("DB_POOL_SIZE", "20")]


async def test_strategic_patch_merges_containers_by_name(seeded: KubernetesFake) -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "app", "image": "registry.example.com/payments-api:1.14.3"}]}
            }
        }
    }
    patched = await client(seeded).patch(Deployment, "payments-api", patch, namespace=NAMESPACE)
    container = patched.spec.template.spec.containers[0]
    assert (
        container.image.endswith(":1.14.3") and container.env[0].valueFrom.configMapKeyRef.key == "pool_size"
    )
    merged = await client(seeded).patch(
        Deployment, "ledger", patch, namespace=NAMESPACE, patch_type=PatchType.MERGE
    )
    assert [c.to_dict() for c in merged.spec.template.spec.containers] == [
        patch["spec"]["template"]["spec"]["containers"][0]
    ]


async def test_scale_subresource(seeded: KubernetesFake) -> None:
    kube = client(seeded)
    scale = await kube.get(DeploymentScale, "payments-api", namespace=NAMESPACE)
    assert (scale.spec.replicas, scale.status.selector) == (3, "app=payments-api")
    dry = await kube.patch(
        DeploymentScale, "payments-api", {"spec": {"replicas": 0}}, namespace=NAMESPACE, dry_run=True
    )
    assert dry.spec.replicas == 0
    assert seeded.get_object("Deployment", "payments-api", NAMESPACE)["spec"]["replicas"] == 3
    await kube.patch(
        DeploymentScale,
        "payments-api",
        {"spec": {"replicas": 5}},
        namespace=NAMESPACE,
        patch_type=PatchType.MERGE,
    )
    assert (await kube.get(Deployment, "payments-api", namespace=NAMESPACE)).spec.replicas == 5
    assert [w.path for w in seeded.writes()] == [
        f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/payments-api/scale"
    ]


async def test_replace_with_a_stale_version_conflicts(seeded: KubernetesFake) -> None:
    kube = client(seeded)
    deployment = await kube.get(Deployment, "ledger", namespace=NAMESPACE)
    deployment.spec.replicas = 4
    replaced = await kube.replace(deployment)
    assert replaced.spec.replicas == 4
    with pytest.raises(ApiError) as conflict:
        await kube.replace(deployment)  # still the resourceVersion read before the first replace
    assert conflict.value.status.code == 409


async def test_self_subject_access_review_follows_the_token(seeded: KubernetesFake) -> None:
    async def allowed(token: str, verb: str) -> bool:
        attributes = ResourceAttributes(verb=verb, group="apps", resource="deployments", namespace=NAMESPACE)
        review = SelfSubjectAccessReview(spec=SelfSubjectAccessReviewSpec(resourceAttributes=attributes))
        return (await client(seeded, token=token).create(review)).status.allowed

    assert await allowed("admin-token", "patch") is True
    assert await allowed("reader-token", "patch") is False
    assert await allowed("reader-token", "list") is True
    assert seeded.writes() == []


async def test_metrics_only_with_metrics_server(seeded: KubernetesFake) -> None:
    kube = client(seeded)
    with pytest.raises(ApiError) as absent:
        await _names(kube.list(PodMetrics, namespace=NAMESPACE))
    assert absent.value.status.code == 404
    async with _raw(seeded) as raw:
        groups = [g["name"] for g in (await raw.get("/apis")).json()["groups"]]
        assert "apps" in groups and "metrics.k8s.io" not in groups
        seeded.metrics_server = True
        assert "metrics.k8s.io" in [g["name"] for g in (await raw.get("/apis")).json()["groups"]]
    usage = {
        m.metadata.name: m["containers"][0]["usage"] async for m in kube.list(PodMetrics, namespace=NAMESPACE)
    }
    assert usage[LEDGER_PODS[0]] == {"cpu": "87m", "memory": "214Mi"}
    assert (await kube.get(NodeMetrics, "node-a"))["usage"]["cpu"] == "612m"
    seeded.metrics_unavailable = True
    with pytest.raises(ApiError) as down:
        await kube.get(NodeMetrics, "node-a")
    assert (down.value.status.code, down.value.status.reason) == (503, "ServiceUnavailable")


async def test_tls_is_refused_without_the_ca(seeded: KubernetesFake) -> None:
    document = yaml.safe_load(seeded.kubeconfig())
    del document["clusters"][0]["cluster"]["certificate-authority-data"]
    untrusting = lightkube.AsyncClient(config=KubeConfig.from_dict(document), trust_env=False)
    with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        await untrusting.get(Pod, PAYMENTS_PODS[0], namespace=NAMESPACE)
    assert seeded.requests == []
    assert (
        await client(seeded).get(Pod, PAYMENTS_PODS[0], namespace=NAMESPACE)
    ).metadata.name == PAYMENTS_PODS[0]


async def test_fail_next_answers_a_status_then_recovers(seeded: KubernetesFake) -> None:
    seeded.fail_next(503)
    kube = client(seeded)
    with pytest.raises(ApiError) as failed:
        await kube.get(Node, "node-a")
    assert (failed.value.status.code, failed.value.status.reason) == (503, "ServiceUnavailable")
    assert (await kube.get(Node, "node-a")).metadata.name == "node-a"
    assert [r.status for r in seeded.requests] == [503, 200]


async def test_discovery_lists_resources_and_subresources(seeded: KubernetesFake) -> None:
    async with _raw(seeded) as raw:
        core = {r["name"]: r for r in (await raw.get("/api/v1")).json()["resources"]}
        assert core["pods"]["namespaced"] and not core["nodes"]["namespaced"] and "pods/log" in core
        apps = {r["name"]: r["kind"] for r in (await raw.get("/apis/apps/v1")).json()["resources"]}
        assert apps["deployments"] == "Deployment" and apps["deployments/scale"] == "Scale"
        assert (await raw.get("/api")).json()["versions"] == ["v1"]


async def test_every_seeded_object_decodes_as_lightkube_models(seeded: KubernetesFake) -> None:
    kube = client(seeded)
    assert await _names(kube.list(Namespace)) == ["default", NAMESPACE]
    assert await _names(kube.list(Service, namespace=NAMESPACE)) == ["ledger", "payments-api"]
    assert await _names(kube.list(Deployment, namespace="*")) == ["ledger", "payments-api"]
    assert len(await _names(kube.list(Event, namespace=NAMESPACE))) == 7
    assert len(await _names(kube.list(ReplicaSet, namespace=NAMESPACE))) == 3
    assert await _names(kube.list(ConfigMap, namespace=NAMESPACE)) == ["payments-config"]


async def test_hang_next_holds_a_request_past_the_client_timeout(seeded: KubernetesFake) -> None:
    seeded.hang_next(30)
    config = KubeConfig.from_dict(yaml.safe_load(seeded.kubeconfig()))
    impatient = lightkube.AsyncClient(config=config, trust_env=False, timeout=httpx2.Timeout(0.3))
    with pytest.raises(httpx2.ReadTimeout):
        await impatient.get(Node, "node-a")
    assert (await client(seeded).get(Node, "node-a")).metadata.name == "node-a"


async def test_a_namespaced_token_is_refused_elsewhere() -> None:
    tokens = {"team-token": None}
    with KubernetesFake(tokens=tokens, token_namespaces={"team-token": {NAMESPACE}}) as fake:
        seed_payments(fake)
        kube = client(fake, token="team-token")
        assert len(await _names(kube.list(Pod, namespace=NAMESPACE))) == 5
        with pytest.raises(ApiError) as everywhere:
            await _names(kube.list(Pod, namespace="*"))
        assert everywhere.value.status.message == (
            'pods is forbidden: User "system:serviceaccount:ongrid:team" cannot list resource "pods" '
            'in API group "" at the cluster scope'
        )
        with pytest.raises(ApiError) as nodes:
            await kube.get(Node, "node-a")
        assert nodes.value.status.code == 403


async def test_create_and_delete_honour_dry_run(seeded: KubernetesFake) -> None:
    kube = client(seeded)
    config = ConfigMap(metadata=ObjectMeta(name="extra", namespace=NAMESPACE), data={"a": "1"})
    would_be = await kube.create(config, dry_run=True)
    assert would_be.metadata.uid and seeded.get_object("ConfigMap", "extra", NAMESPACE) is None
    created = await kube.create(config)
    assert seeded.get_object("ConfigMap", "extra", NAMESPACE)["metadata"]["uid"] == created.metadata.uid
    with pytest.raises(ApiError) as again:
        await kube.create(config)
    assert (again.value.status.code, again.value.status.reason) == (409, "AlreadyExists")
    await kube.delete(ConfigMap, "extra", namespace=NAMESPACE, dry_run=True)
    assert seeded.get_object("ConfigMap", "extra", NAMESPACE) is not None
    await kube.delete(ConfigMap, "extra", namespace=NAMESPACE)
    assert seeded.get_object("ConfigMap", "extra", NAMESPACE) is None
    assert [w.method for w in seeded.writes()] == ["POST", "POST", "DELETE"]


def test_its_kubeconfig_reads_with_the_product_parser(kube_api: KubernetesFake) -> None:  # noqa: F811
    access = kubeconfig.parse(kube_api.kubeconfig("reader-token", namespace=NAMESPACE))
    assert (access.server, access.token, access.namespace) == (kube_api.url, "reader-token", NAMESPACE)
    assert access.ca_pem == kube_api.ca_pem
