"""The investigator's brief points at the cluster tools when the incident's alerts name Kubernetes
objects (labels `namespace`, `pod`, `deployment`, `cluster`) and the organization has a cluster."""

from __future__ import annotations

import datetime as dt

import pytest

from incidents_app import runner
from ops_app.models import Alert, DataSource, Incident

pytestmark = pytest.mark.django_db
T0 = dt.datetime(2026, 12, 1, 10, 0, tzinfo=dt.UTC)
LABELS = {"namespace": "payments", "pod": "payments-api-7f8b9c6d4e-2xkqp", "deployment": "payments-api"}


def incident_with(org, *label_sets: dict) -> Incident:
    incident = Incident.objects.create(
        organization=org, title="payments restarting", severity="critical", started_at=T0
    )
    for index, labels in enumerate(label_sets):
        Alert.objects.create(
            organization=org,
            incident=incident,
            name="KubePodCrashLooping",
            fingerprint=f"{incident.pk}-{index}",
            status="firing",
            severity="critical",
            labels={"alertname": "KubePodCrashLooping", **labels},
            starts_at=T0,
        )
    return incident


def add_cluster(org, name: str, default: bool = True) -> None:
    DataSource.objects.create(
        organization=org,
        kind=DataSource.Kind.KUBERNETES,
        name=name,
        url="https://10.0.0.1:6443",
        is_default=default,
    )


def test_the_brief_names_the_workload_and_the_calls_on_the_labelled_cluster(org):
    add_cluster(org, "staging")
    add_cluster(org, "prod-eu", default=False)
    brief = runner.brief(incident_with(org, {**LABELS, "cluster": "prod-eu"}))
    assert "The alerts name Kubernetes objects on cluster prod-eu (namespace payments; deployment " in brief
    assert 'k8s_get(cluster="prod-eu", kind="pods", namespace="payments")' in brief
    assert f'k8s_logs(cluster="prod-eu", pod="{LABELS["pod"]}", namespace="payments", previous=true)' in brief
    assert 'k8s_rollout_history(cluster="prod-eu", deployment="payments-api", namespace="payments")' in brief
    assert "none of this organization's clusters" not in brief


def test_a_cluster_label_the_organization_does_not_have_leaves_the_default_and_says_so(org):
    add_cluster(org, "staging")
    brief = runner.brief(incident_with(org, {"namespace": "payments", "cluster": "gke-prod-1"}))
    assert 'k8s_get(kind="pods", namespace="payments")' in brief and 'cluster="' not in brief
    assert "cluster label gke-prod-1 is none of this organization's clusters: staging" in brief


def test_no_hint_without_kubernetes_labels_or_without_a_cluster(org, other_org):
    add_cluster(org, "staging")
    assert "k8s_" not in runner.brief(incident_with(org, {"instance": "db-01:9100"}))
    assert "k8s_" not in runner.brief(incident_with(org, {"cluster": "staging"}))
    add_cluster(other_org, "prod")  # another organization's cluster does not count
    no_cluster = incident_with(org, LABELS)
    DataSource.objects.filter(organization=org).delete()
    assert "k8s_" not in runner.brief(no_cluster)
