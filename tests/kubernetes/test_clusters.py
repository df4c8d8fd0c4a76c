"""Clusters as data sources (docs/kubernetes.md, "Connecting a cluster"): a pasted kubeconfig's
context, credentials kept inline (no files, no commands), the egress policy on the server really
dialled, the token and kubeconfig write-only and encrypted, in-cluster access for one named
organization only."""

from __future__ import annotations

import base64
import dataclasses
import json
import os

import httpx2
import pytest
import yaml
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.db import connection
from django.urls import reverse

from ongrid_site import config
from ops_app.core import kubeconfig
from ops_app.core.egress import AllowList, EgressRefused
from ops_app.integrations import kubernetes
from ops_app.integrations.datasources import save_data_source
from ops_app.models import DataSource
from tests.support.kubernetes import seed_payments

pytestmark = pytest.mark.django_db
TOKEN = "eyJhbGciOiJSUzI1NiJ9.k8s-service-account-token-7731"
CA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def config_text(**user) -> str:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "prod",
        "clusters": [
            {
                "name": "prod-cluster",
                "cluster": {"server": "https://34.120.1.10:6443/", "certificate-authority-data": b64(CA)},
            },
            {"name": "staging-cluster", "cluster": {"server": "https://34.120.1.20:6443"}},
        ],
        "users": [{"name": "ongrid", "user": user or {"token": TOKEN}}],
        "contexts": [
            {
                "name": "prod",
                "context": {"cluster": "prod-cluster", "user": "ongrid", "namespace": "payments"},
            },
            {"name": "staging", "context": {"cluster": "staging-cluster", "user": "ongrid"}},
        ],
    }
    return yaml.safe_dump(document)


def test_the_current_context_gives_server_token_ca_and_namespace():
    access = kubeconfig.parse(config_text())
    assert (access.context, access.server, access.namespace) == (
        "prod",
        "https://34.120.1.10:6443",
        "payments",
    )
    assert access.token == TOKEN and access.ca_pem == CA
    assert TOKEN not in repr(access)


def test_another_context_can_be_chosen_and_an_unknown_one_lists_those_there_are():
    assert kubeconfig.parse(config_text(), "staging").server == "https://34.120.1.20:6443"
    with pytest.raises(
        kubeconfig.KubeconfigError, match=r"no context named 'dev' \(its contexts: prod, staging\)"
    ):
        kubeconfig.parse(config_text(), "dev")
    assert kubeconfig.context_names(config_text()) == ["prod", "staging"]


@pytest.mark.parametrize(
    "user, refused",
    [
        ({"exec": {"command": "/bin/sh", "args": ["-c", "id"]}}, "exec"),
        ({"tokenFile": "/etc/shadow"}, "tokenFile"),
        ({"client-certificate": "/root/cert.pem", "client-key": "/root/key.pem"}, "client-certificate"),
        ({"auth-provider": {"name": "gcp"}}, "auth-provider"),
    ],
)
def test_credentials_that_read_files_or_run_commands_on_the_server_are_refused(user, refused):
    with pytest.raises(kubeconfig.KubeconfigError, match=f"`{refused}` is refused"):
        kubeconfig.parse(config_text(**user))


def test_a_certificate_authority_file_is_refused_and_unreadable_text_says_why():
    text = config_text().replace("certificate-authority-data", "certificate-authority")
    with pytest.raises(kubeconfig.KubeconfigError, match="`certificate-authority` is refused"):
        kubeconfig.parse(text)
    with pytest.raises(kubeconfig.KubeconfigError, match="not valid YAML"):
        kubeconfig.parse("clusters: [")
    with pytest.raises(kubeconfig.KubeconfigError, match="no token and no client-certificate-data"):
        kubeconfig.parse(config_text(username="admin"))
    with pytest.raises(kubeconfig.KubeconfigError, match="not base64"):
        kubeconfig.parse(config_text(**{"client-certificate-data": "%%%", "client-key-data": "%%%"}))


def cluster(org, **values) -> DataSource:
    fields = {"organization": org, "kind": "kubernetes", "name": "prod"} | values
    return DataSource(**fields)


def test_a_kubeconfig_sets_the_url_to_its_server_and_the_policy_judges_that_server(org, settings):
    source = cluster(org, kubeconfig=config_text())
    source.full_clean()
    assert source.url == "https://34.120.1.10:6443"
    private = config_text().replace("34.120.1.10", "10.0.0.1")
    with pytest.raises(ValidationError) as refused:
        cluster(org, kubeconfig=private).full_clean()
    assert "url" in refused.value.message_dict  # a private address, refused without an allow entry
    with pytest.raises(ValidationError) as broken:
        cluster(org, kubeconfig=config_text(), kube_context="nope").full_clean()
    assert "no context named 'nope'" in broken.value.message_dict["kubeconfig"][0]


def test_without_a_kubeconfig_a_cluster_needs_a_url_and_a_bearer_token(org):
    with pytest.raises(ValidationError) as missing:
        cluster(org).full_clean()
    assert "url" in missing.value.message_dict
    with pytest.raises(ValidationError) as tokenless:
        cluster(org, url="https://34.120.1.10:6443").full_clean()
    assert "bearer token" in tokenless.value.message_dict["secret"][0]
    cluster(org, url="https://34.120.1.10:6443", auth="bearer", secret=TOKEN).full_clean()


def test_namespaces_are_names_and_restrict_the_cluster(org):
    source = cluster(
        org, url="https://34.120.1.10:6443", auth="bearer", secret=TOKEN, namespaces="payments, ledger"
    )
    source.full_clean()
    assert kubernetes.cluster_of(source).namespaces == ("payments", "ledger")
    assert kubernetes.cluster_of(source).allows("ledger") and not kubernetes.cluster_of(source).allows(
        "kube-system"
    )
    with pytest.raises(ValidationError) as bad:
        cluster(
            org, url="https://34.120.1.10:6443", auth="bearer", secret=TOKEN, namespaces="Payments_1"
        ).full_clean()
    assert "Payments_1" in bad.value.message_dict["namespaces"][0]


def test_token_and_kubeconfig_are_encrypted_and_never_rendered_back(client, org_admin, org):
    client.force_login(org_admin)
    data = {
        "name": "prod",
        "kind": "kubernetes",
        "url": "",
        "auth": "none",
        "kubeconfig": config_text(),
        "kube_context": "prod",
        "namespaces": "payments",
        "verify_tls": "on",
        "timeout": "5",
    }
    response = client.post(reverse("admin:ops_app_datasource_add"), data)
    assert response.status_code == 302, response.content.decode()[:3000]
    source = DataSource.objects.get(organization=org, name="prod")
    assert kubernetes.cluster_of(source).token == TOKEN
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM ops_app_datasource")
        assert TOKEN not in json.dumps(cursor.fetchall(), default=str)
    page = client.get(reverse("admin:ops_app_datasource_change", args=[source.pk])).content.decode()
    assert TOKEN not in page and b64(CA) not in page


def test_in_cluster_access_only_for_the_organization_platform_staff_name(
    org, other_org, settings, monkeypatch, tmp_path
):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    with pytest.raises(ValidationError) as off:
        cluster(org, auth="in-cluster").full_clean()
    assert "ONGRID_KUBERNETES_IN_CLUSTER" in off.value.message_dict["auth"][0]
    settings.CONFIG = config.load({**os.environ, "ONGRID_KUBERNETES_IN_CLUSTER": org.slug})
    with pytest.raises(ValidationError):
        cluster(other_org, auth="in-cluster").full_clean()
    source = cluster(org, auth="in-cluster")
    source.full_clean()  # the pod's own API server is allowed by the egress policy
    assert source.url == "https://10.96.0.1:443"
    (tmp_path / "token").write_text(TOKEN + "\n")
    (tmp_path / "ca.crt").write_text(CA)
    monkeypatch.setattr(kubernetes, "SERVICE_ACCOUNT", tmp_path)
    saved = save_data_source(source)
    found = kubernetes.cluster_of(DataSource.objects.get(pk=saved.pk))
    assert (found.server, found.token, found.ca_pem) == ("https://10.96.0.1:443", TOKEN, CA)


# --- reaching a cluster: the fake API server (fakes/kubernetes_api.py) through lightkube ----------


def saved_cluster(org, fake, token: str = "admin-token", **values) -> DataSource:
    source = cluster(org, url=fake.url, auth="bearer", secret=token, ca_bundle=fake.ca_pem, **values)
    source.full_clean()
    return save_data_source(source)


def test_test_says_the_version_and_what_the_token_may_do_without_any_remote_body(org, kube_api):
    answer = kubernetes.check_connection(saved_cluster(org, kube_api, namespaces="payments"))
    assert answer.ok, answer.lines
    assert answer.lines == [
        "Kubernetes v1.31.2",
        "may list pods in payments: yes",
        "may read pod logs in payments: yes",
        "may list events in payments: yes",
        "may patch deployments (write tools) in payments: yes",
    ]
    reader = kubernetes.check_connection(saved_cluster(org, kube_api, "reader-token", name="ro"))
    assert reader.ok and reader.lines[-1] == "may patch deployments (write tools) in all namespaces: no"
    reviews = [r for r in kube_api.requests if r.path.endswith("selfsubjectaccessreviews")]
    assert len(reviews) == 8 and all(r.method == "POST" for r in reviews)


def test_a_refused_token_an_untrusted_ca_and_a_non_kubernetes_server_are_short_reasons(org, kube_api):
    refused = kubernetes.check_connection(saved_cluster(org, kube_api, "stolen-token"))
    assert not refused.ok and refused.lines == [f"{kube_api.url}: HTTP 401 (the token is not accepted)"]
    untrusted = cluster(org, name="noca", url=kube_api.url, auth="bearer", secret="admin-token")
    answer = kubernetes.check_connection(save_data_source(untrusted))
    assert not answer.ok and "certificate" in answer.lines[0].lower()
    assert "admin-token" not in " ".join(answer.lines + refused.lines)


def test_the_admin_test_button_runs_the_cluster_check(client, org_admin, org, kube_api):
    source = saved_cluster(org, kube_api)
    client.force_login(org_admin)
    answered = client.post(reverse("admin:ops_app_datasource_test", args=[source.pk]), follow=True)
    [message] = [str(m) for m in answered.context["messages"]]
    assert message.startswith(
        "prod (Kubernetes) answers: Kubernetes v1.31.2 | may list pods in all namespaces: yes"
    )


@pytest.mark.django_db(transaction=True)
async def test_the_client_goes_through_the_egress_policy(org, kube_api, settings):
    from lightkube.resources.core_v1 import Namespace

    seed_payments(kube_api)
    source = await sync_to_async(saved_cluster)(org, kube_api)
    found = await kubernetes.acluster(org.id)
    api = kubernetes.client(found)
    names = [item.metadata.name async for item in api.list(Namespace)]
    assert "payments" in names and source.name == found.name
    settings.CONFIG = dataclasses.replace(settings.CONFIG, egress_allow=AllowList())
    with pytest.raises(EgressRefused):
        [item async for item in kubernetes.client(found).list(Namespace)]


async def test_the_client_verifies_the_cluster_s_certificate_with_its_ca_only(kube_api):
    from lightkube.resources.core_v1 import Namespace

    trusted = kubernetes.Cluster(
        name="prod", server=kube_api.url, token="admin-token", ca_pem=kube_api.ca_pem
    )
    assert [item async for item in kubernetes.client(trusted).list(Namespace)] == []
    untrusted = dataclasses.replace(trusted, ca_pem="")  # the system's CAs do not know the fake's
    with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        [item async for item in kubernetes.client(untrusted).list(Namespace)]
    assert [r.path for r in kube_api.requests] == ["/api/v1/namespaces"]  # the refused one never arrived
