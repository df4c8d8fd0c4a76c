"""Cluster rollouts and ConfigMap edits become change events (docs/kubernetes.md), against
the fake API server through the real client: first sight, a template PATCH making a new revision,
a ConfigMap edit, Secrets never read, a cluster down, tenancy, and the incident page's "What
changed"."""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import logging
import threading

import pytest
from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from lightkube.resources.apps_v1 import Deployment
from lightkube.resources.core_v1 import ConfigMap, Secret
from lightkube.types import PatchType

from fakes.kubernetes_api import KubernetesFake, timestamp
from incidents_app.changes import what_changed
from ops_app import cluster_collector
from ops_app.core.cluster_snapshot import ClusterState, DeploymentState, Revision
from ops_app.estate import change_events, cluster_changes
from ops_app.integrations import kubernetes, kubernetes_changes
from ops_app.models import ChangeEvent, DataSource, Incident, TopologyNode
from tests.support.kubernetes import (  # noqa: F401 - kube_api is the fixture
    NAMESPACE,
    OLD_ENV,
    PAYMENTS_IMAGE,
    client,
    kube_api,
    seed_payments,
)

CLUSTER_TYPES = ("k8s_deployment", "k8s_configmap")


@pytest.fixture
def seeded(kube_api: KubernetesFake) -> KubernetesFake:  # noqa: F811 - the fixture
    seed_payments(kube_api)
    return kube_api


@pytest.fixture
def quiet(settings):
    """No investigation starts on its own when a test opens an incident."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, auto_investigate=False)


def cluster(
    org, fake: KubernetesFake, name: str = "prod", token: str = "reader-token", **extra
) -> DataSource:
    return DataSource.objects.create(
        organization=org,
        name=name,
        kind=DataSource.Kind.KUBERNETES,
        kubeconfig=fake.kubeconfig(token),
        **extra,
    )


def k8s_events(org, **filters) -> list[ChangeEvent]:
    rows = ChangeEvent.objects.filter(organization=org, resource_type__in=CLUSTER_TYPES, **filters)
    return list(rows.order_by("occurred_at", "pk"))


def patch(fake: KubernetesFake, kind, name: str, body: dict, patch_type=PatchType.STRATEGIC) -> None:
    """A write through the real client with the admin's token, as `kubectl edit` would send it."""

    async def run() -> None:
        api = client(fake, namespace=NAMESPACE)
        try:
            await api.patch(kind, name, body, namespace=NAMESPACE, patch_type=patch_type)
        finally:
            await api.close()

    async_to_sync(run)()


def written_by(manager: str, *path: str) -> dict:
    """A managedFields entry of `manager` owning `path`, written now. The fake keeps managedFields
    as sent (it does not derive them from fieldManager), so the edit sends them, as a client may."""
    fields: dict = {}
    node = fields
    for step in path:
        node = node.setdefault(step, {})
    return {
        "manager": manager,
        "operation": "Update",
        "apiVersion": "v1",
        "time": timestamp(),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }


def test_first_sight_records_only_what_changed_in_the_last_two_hours(org, seeded):
    source = cluster(org, seeded)
    assert cluster_collector.collect_from(source) == 2
    configmap, rollout = sorted(k8s_events(org), key=lambda e: e.resource_type)
    # Revision 2 (30 minutes ago) is found; revision 1 (3 days) and the ledger (12 days) are the baseline.
    assert rollout.resource_name == "prod/payments/payments-api"
    assert rollout.summary == (
        "payments-api rolled out revision 2: "
        "env DB_POOL_SIZE 20 → from ConfigMap payments-config (key pool_size)"
    )
    assert rollout.actor_name == "kubernetes"  # the seed's deployment has no managedFields
    assert abs(timezone.now() - dt.timedelta(minutes=30) - rollout.occurred_at) < dt.timedelta(minutes=1)
    assert configmap.resource_name == "prod/payments/payments-config"
    assert configmap.actor_name == "kubectl-edit"
    assert configmap.summary.startswith("payments-config changed by kubectl-edit (first seen now")
    assert abs(timezone.now() - dt.timedelta(minutes=32) - configmap.occurred_at) < dt.timedelta(minutes=1)
    assert cluster_collector.collect_from(source) == 0


def test_a_template_patch_is_one_rollout_event_with_its_diff_and_its_manager(org, seeded):
    source = cluster(org, seeded)
    cluster_collector.collect_from(source)
    before = len(k8s_events(org))
    container = {"name": "app", "image": PAYMENTS_IMAGE.replace("1.14.2", "1.14.3")}
    container["resources"] = {"limits": {"memory": "256Mi"}}
    body = {
        "metadata": {"managedFields": [written_by("kubectl-edit", "f:spec", "f:template")]},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }
    patch(seeded, Deployment, "payments-api", body)

    assert cluster_collector.collect_from(source) == 1
    event = k8s_events(org)[-1]
    assert event.resource_type == "k8s_deployment" and event.actor_name == "kubectl-edit"
    assert event.summary == (
        "payments-api rolled out revision 3: image registry.example.com/payments-api:1.14.2 → 1.14.3; "
        "memory limit 512Mi → 256Mi"
    )
    assert event.before["revision"] == 2 and event.after["revision"] == 3
    assert event.after["image"] == "registry.example.com/payments-api:1.14.3"
    assert timezone.now() - event.occurred_at < dt.timedelta(minutes=1)
    # Polling again records nothing more.
    assert cluster_collector.collect_from(source) == 0
    assert len(k8s_events(org)) == before + 1


def test_a_configmap_edit_is_one_event_with_its_key_diff(org, seeded):
    source = cluster(org, seeded)
    cluster_collector.collect_from(source)
    long_value = "x" * 300
    body = {
        "metadata": {"managedFields": [written_by("kubectl-edit", "f:data")]},
        "data": {"pool_size": "5", "LOG_LEVEL": None, "FEATURE_X": long_value, "api_token": "s3cr3t-value"},
    }
    patch(seeded, ConfigMap, "payments-config", body, PatchType.MERGE)

    assert cluster_collector.collect_from(source) == 1
    event = k8s_events(org, resource_type="k8s_configmap")[-1]
    assert event.summary == (
        "payments-config changed by kubectl-edit: added FEATURE_X; removed LOG_LEVEL; added api_token; "
        "pool_size five → 5"
    )
    assert event.before["pool_size"] == "five" and event.after["pool_size"] == "5"
    assert len(event.after["FEATURE_X"]) == 100  # cut
    assert event.after["api_token"] == "(hidden)" and "s3cr3t" not in str(event.after)
    # A label alone is no change of content; a change past the cut is one.
    patch(
        seeded, ConfigMap, "payments-config", {"metadata": {"labels": {"team": "payments"}}}, PatchType.MERGE
    )
    assert cluster_collector.collect_from(source) == 0
    patch(seeded, ConfigMap, "payments-config", {"data": {"FEATURE_X": long_value + "y"}}, PatchType.MERGE)
    assert cluster_collector.collect_from(source) == 1


def test_secrets_are_never_requested_and_their_edits_record_nothing(org, seeded):
    seeded.put(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "payments-db", "namespace": NAMESPACE},
            "data": {"password": "c2VjcmV0"},
        }
    )
    source = cluster(org, seeded)
    cluster_collector.collect_from(source)
    patch(seeded, Secret, "payments-db", {"data": {"password": "bmV3"}}, PatchType.MERGE)
    seeded.clear()
    assert cluster_collector.collect_from(source) == 0
    assert seeded.requests and not [r.path for r in seeded.requests if "secret" in r.path]


def test_a_cluster_down_or_refusing_is_logged_once_and_the_others_are_still_collected(org, seeded, caplog):
    refusing = cluster(org, seeded, name="refusing", token="revoked-token-9f2c")
    down = cluster(org, seeded, name="down")
    down.kubeconfig = down.kubeconfig.replace(seeded.url, "https://127.0.0.1:9")
    down.save()
    cluster(org, seeded, name="prod")
    with caplog.at_level(logging.INFO, logger="ops_app.cluster_collector"):
        assert cluster_collector.collect_all() == 2
        assert cluster_collector.collect_all() == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2, warnings  # once per cluster, not once per poll
    assert any("cluster refusing" in w and "HTTP 401" in w for w in warnings)
    assert any("cluster down" in w for w in warnings)
    assert "revoked-token-9f2c" not in caplog.text and "Unauthorized" not in caplog.text
    assert {e.resource_name.split("/")[0] for e in k8s_events(org)} == {"prod"}
    # Back: said once, at INFO.
    refusing.kubeconfig = seeded.kubeconfig("reader-token")
    refusing.save()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="ops_app.cluster_collector"):
        assert cluster_collector.collect_from(refusing) == 2
    assert [r.getMessage() for r in caplog.records] == [
        f"cluster refusing (organization {org.pk}): reachable again"
    ]


def test_an_organization_s_poll_never_records_in_another(org, other_org, seeded):
    # Both connect the same cluster; the other organization may read only "default".
    cluster(org, seeded, token="reader-token")
    cluster(other_org, seeded, token="admin-token", namespaces="default")
    cluster_collector.collect_all()
    patch(seeded, Deployment, "payments-api", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    cluster_collector.collect_all()
    assert len(k8s_events(org)) == 3
    assert k8s_events(other_org) == []
    paths = [r.path for r in seeded.requests if r.token == "admin-token" and r.method == "GET"]
    assert paths and all(
        p.startswith(("/api/v1/namespaces/default/", "/apis/apps/v1/namespaces/default/")) for p in paths
    )


def test_the_rollout_shows_on_the_incident_page_as_the_likely_cause(client, org, member, seeded, quiet):
    with change_events.suppressed():  # the estate as it was: its own creation is no suspect
        TopologyNode.objects.create(organization=org, name="payments")
    source = cluster(org, seeded)
    cluster_collector.collect_from(source)
    container = {"name": "app", "image": PAYMENTS_IMAGE.replace("1.14.2", "1.15.0")}
    body = {
        "metadata": {"managedFields": [written_by("helm", "f:spec", "f:template")]},
        "spec": {"template": {"spec": {"containers": [container]}}},
    }
    patch(seeded, Deployment, "payments-api", body)
    cluster_collector.collect_from(source)
    incident = Incident.objects.create(
        organization=org,
        title="payments 5xx",
        severity="critical",
        started_at=timezone.now() + dt.timedelta(minutes=3),
        affected_services=["payments"],
    )
    client.force_login(member)
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert (
        "payments-api rolled out revision 3: image registry.example.com/payments-api:1.14.2 → 1.15.0" in page
    )
    likely = page.split('<p class="likely-change">', 1)[1].split("</p>", 1)[0]
    assert "rolled out revision 3" in likely and "before the start" in likely
    # The investigator's brief carries it too, marked on the incident's neighbourhood.
    changes = {c.summary: c for c in what_changed(incident)}
    rollout = next(c for s, c in changes.items() if "revision 3" in s)
    assert rollout.related and rollout.actor == "helm"
    # Outside the window (two hours before the start), it is not shown.
    incident.started_at = timezone.now() + dt.timedelta(hours=3)
    incident.save()
    page = client.get(reverse("incident-page", args=[incident.pk])).content.decode()
    assert "rolled out revision 3" not in page


def test_beat_polls_the_clusters_every_interval():
    from ongrid_site.celery import app

    entry = settings.CELERY_BEAT_SCHEDULE["collect-cluster-changes"]
    assert entry["schedule"] == settings.CONFIG.k8s_changes_interval == 60.0
    app.loader.import_default_modules()
    assert entry["task"] in app.tasks


def test_the_interval_is_read_from_the_environment():
    from ongrid_site.config import load

    assert load({"SECRET_KEY": "t", "ONGRID_K8S_CHANGES_INTERVAL": "15"}).k8s_changes_interval == 15.0
    assert load({"SECRET_KEY": "t", "ONGRID_K8S_CHANGES_INTERVAL": "0"}).k8s_changes_interval == 0.0


def test_collect_now_from_the_command_line(org, seeded):
    cluster(org, seeded)
    out = io.StringIO()
    call_command("ongrid_collect_cluster_changes", stdout=out)
    assert out.getvalue().strip() == "2 change event(s) recorded."
    assert len(k8s_events(org)) == 2


def test_a_rollback_to_an_earlier_template_is_told_as_such_and_dated_now(org, seeded):
    source = cluster(org, seeded)
    cluster_collector.collect_from(source)
    # What `kubectl rollout undo` writes: revision 1's template again (the fake renumbers its ReplicaSet).
    undo = [{"op": "replace", "path": "/spec/template/spec/containers/0/env", "value": OLD_ENV}]
    patch(seeded, Deployment, "payments-api", undo, PatchType.JSON)

    assert cluster_collector.collect_from(source) == 1
    event = k8s_events(org, resource_type="k8s_deployment")[-1]
    assert event.summary == (
        "payments-api rolled back to an earlier template (revision 3): "
        "env DB_POOL_SIZE from ConfigMap payments-config (key pool_size) → 20"
    )
    # Its ReplicaSet is 3 days old; the rollback happened since the last poll.
    assert timezone.now() - event.occurred_at < dt.timedelta(minutes=1)


@pytest.mark.django_db(transaction=True)
def test_polls_at_once_record_each_change_once(org, seeded):
    source = cluster(org, seeded)
    seen = async_to_sync(kubernetes_changes.read_cluster)(kubernetes.cluster_of(source))
    racers = 4
    start = threading.Barrier(racers, timeout=20)
    recorded: list[int] = []
    errors: list[BaseException] = []

    def poll() -> None:
        start.wait()
        try:
            recorded.append(len(cluster_changes.record_cluster_state(source, seen)))
        except BaseException as error:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=poll) for _ in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert sorted(recorded) == [0, 0, 0, 2]
    assert len(k8s_events(org)) == 2


def test_a_deployment_made_again_under_its_name_starts_its_revisions_anew(org, seeded):
    source = cluster(org, seeded)
    now = timezone.now()
    template = {"containers": {"app": {"image": "shop:1", "resources": {}, "env": {}, "env_from": []}}}

    def state(uid: str, number: int, age: dt.timedelta) -> ClusterState:
        revision = Revision(number, f"rs-{uid}", now - age, template)
        return ClusterState([DeploymentState("shop", "web", uid, "helm", None, [revision])], [])

    assert cluster_changes.record_cluster_state(source, state("first", 5, dt.timedelta(days=9))) == []
    [event] = cluster_changes.record_cluster_state(source, state("second", 1, dt.timedelta(seconds=5)))
    assert event.summary == "web created with revision 1: image shop:1" and event.actor_name == "helm"
    assert event.action == "create" and event.resource_id == "second"


@pytest.mark.parametrize(
    ("node", "related"),
    [("payments-api", True), ("payments", True), ("ledger", False), ("api", False), ("pay", False)],
)
def test_a_cluster_change_is_on_the_incident_when_a_node_names_its_workload(org, quiet, node, related):
    with change_events.suppressed():
        TopologyNode.objects.create(organization=org, name=node)
    started = timezone.now()
    ChangeEvent.objects.create(
        organization=org,
        occurred_at=started - dt.timedelta(minutes=5),
        actor_name="helm",
        action="update",
        resource_type="k8s_deployment",
        resource_id="uid-1",
        resource_name="prod/shop/payments-api",
        summary="payments-api rolled out revision 7: image shop:1 → 2",
    )
    incident = Incident.objects.create(
        organization=org, title="5xx", severity="critical", started_at=started, affected_services=[node]
    )
    [change] = what_changed(incident)
    assert change.related is related


def test_collect_now_in_the_admin_records_the_selected_clusters_changes_or_says_why_not(
    client, org_admin, org, other_org, seeded
):
    good = cluster(org, seeded)
    refused = cluster(org, seeded, name="old", token="revoked-token")
    theirs = cluster(other_org, seeded, name="theirs")
    prometheus = DataSource.objects.create(organization=org, name="prom", kind="prometheus", url="http://p:9")
    client.force_login(org_admin)
    selected = [good.pk, refused.pk, theirs.pk, prometheus.pk]
    data = {"action": "collect_cluster_changes", "_selected_action": selected}
    answer = client.post(reverse("admin:ops_app_datasource_changelist"), data, follow=True)

    shown = [str(m) for m in answer.context["messages"]]
    assert shown == ["old: not collected: HTTP 401", "prod: 2 change event(s) recorded"]  # by name
    assert len(k8s_events(org)) == 2 and not k8s_events(other_org)  # another tenant's row is not selectable
    again = client.post(
        reverse("admin:ops_app_datasource_changelist"), {**data, "_selected_action": [good.pk]}, follow=True
    )
    assert [str(m) for m in again.context["messages"]] == ["prod: 0 change event(s) recorded"]
