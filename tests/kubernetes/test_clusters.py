"""Clusters as data sources (docs/kubernetes.md, "Connecting a cluster"): a pasted kubeconfig's
context, credentials kept inline (no files, no commands), the egress policy on the server really
dialled, the token and kubeconfig write-only and encrypted, in-cluster access for one named
organization only."""

from __future__ import annotations

import base64
import json
import os

import pytest
import yaml
from django.core.exceptions import ValidationError
from django.db import connection
from django.urls import reverse

from ongrid_site import config
from ops_app.core import kubeconfig
from ops_app.integrations import kubernetes
from ops_app.integrations.datasources import save_data_source
from ops_app.models import DataSource

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
