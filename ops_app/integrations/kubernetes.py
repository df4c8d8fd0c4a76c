"""An organization's Kubernetes clusters (docs/kubernetes.md): choosing one, connecting to it
through the egress policy, and the admin's "Test".

A cluster is a data source of kind `kubernetes`. Its connection is built here and nowhere else:
the lightkube client (async, on httpx2) gets Ongrid's egress transport, so the address dialled is
one the policy accepted, and the TLS context built from the data source's CA bundle. The tools
(agents_app/toolsets/kubernetes) ask `aconnect` for a client and never see a credential.
"""

from __future__ import annotations

import contextlib
import os
import re
import ssl
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx2
from django.conf import settings
from django.utils.translation import gettext, gettext_lazy
from lightkube import AsyncClient, Client
from lightkube.config.kubeconfig import SingleConfig
from lightkube.config.models import Cluster as LkCluster
from lightkube.config.models import Context, User
from lightkube.core.exceptions import ApiError
from lightkube.resources.authorization_v1 import SelfSubjectAccessReview

from ops_app.core import kubeconfig, outbound
from ops_app.core.egress import EgressRefused
from ops_app.integrations.datasources import UnknownDataSource
from ops_app.models import DataSource

KIND = DataSource.Kind.KUBERNETES
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
FIELD_MANAGER = "ongrid"
VERSION = re.compile(r"^v\d+\.\d+\.\d+[0-9A-Za-z.+-]*$")
# What "Test" asks the cluster it may do, in the words the admin reads.
ACCESS_CHECKS = (
    ("list", "", "pods", "", gettext_lazy("list pods")),
    ("get", "", "pods", "log", gettext_lazy("read pod logs")),
    ("list", "", "events", "", gettext_lazy("list events")),
    ("patch", "apps", "deployments", "", gettext_lazy("patch deployments (write tools)")),
)


@dataclass(frozen=True)
class Cluster:
    """How to reach one cluster; credentials never printed."""

    name: str
    server: str
    namespaces: tuple[str, ...] = ()
    timeout: float = 10.0
    token: str = field(default="", repr=False)
    ca_pem: str = ""
    client_cert_pem: str = ""
    client_key_pem: str = field(default="", repr=False)
    verify_tls: bool = True

    def allows(self, namespace: str) -> bool:
        """Whether the organization lets its agents into `namespace` (no list: every namespace)."""
        return not self.namespaces or namespace in self.namespaces


def cluster_of(source: DataSource) -> Cluster:
    """The connection facts of a data source of kind `kubernetes` (a pasted kubeconfig wins)."""
    common = {"name": source.name, "namespaces": tuple(source.namespace_list()), "timeout": source.timeout}
    if source.auth == DataSource.Auth.IN_CLUSTER:
        return _in_cluster(source, common)
    if source.kubeconfig.strip():
        access = kubeconfig.parse(source.kubeconfig, source.kube_context)
        return Cluster(
            server=access.server,
            token=access.token,
            ca_pem=access.ca_pem or source.ca_bundle,
            client_cert_pem=access.client_cert_pem,
            client_key_pem=access.client_key_pem,
            verify_tls=source.verify_tls and not access.insecure,
            **common,
        )
    return Cluster(
        server=source.url.rstrip("/"),
        token=source.secret or "",
        ca_pem=source.ca_bundle,
        verify_tls=source.verify_tls,
        **common,
    )


def _in_cluster(source: DataSource, common: dict) -> Cluster:
    """Ongrid's own service account: the token is read at every connection (the kubelet rotates
    it), the CA is the one the pod is given."""
    if source.organization.slug != settings.CONFIG.kubernetes_in_cluster:
        raise kubeconfig.KubeconfigError("in-cluster access is not enabled for this organization")
    try:
        token = (SERVICE_ACCOUNT / "token").read_text().strip()
        ca = (SERVICE_ACCOUNT / "ca.crt").read_text()
    except OSError:
        raise kubeconfig.KubeconfigError(f"no service account is mounted at {SERVICE_ACCOUNT}") from None
    server = kubeconfig.in_cluster_url(os.environ) or source.url
    return Cluster(server=server, token=token, ca_pem=ca, verify_tls=True, **common)


def _choose(sources: list[DataSource], name: str | None) -> DataSource | None:
    if name:
        for source in sources:
            if source.name == name:
                return source
        listing = ", ".join(s.name for s in sources) or "none"
        raise UnknownDataSource(
            f"there is no cluster named {name!r} in this organization (its clusters: {listing})"
        )
    return next((s for s in sources if s.is_default), sources[0] if sources else None)


async def acluster(organization_id: int, name: str | None = None) -> Cluster | None:
    """The organization's cluster `name` (or its default); None when it has none. Raises
    UnknownDataSource for a name it does not have, listing those it has."""
    query = DataSource.objects.for_organization(organization_id).filter(kind=KIND)
    source = _choose([s async for s in query.select_related("organization")], name)
    return cluster_of(source) if source else None


def tls_context(cluster: Cluster) -> ssl.SSLContext:
    """The TLS context of one cluster: its CA (else the system's), and its client certificate."""
    context = (
        ssl.create_default_context(cadata=cluster.ca_pem) if cluster.ca_pem else ssl.create_default_context()
    )
    if not cluster.verify_tls:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cluster.client_cert_pem and cluster.client_key_pem:
        with _pem_files(cluster.client_cert_pem, cluster.client_key_pem) as (cert, key):
            context.load_cert_chain(cert, key)
    return context


@contextlib.contextmanager
def _pem_files(*texts: str) -> Iterator[list[str]]:
    """`ssl` loads a client certificate from files only: private ones, removed at once."""
    with tempfile.TemporaryDirectory(prefix="ongrid-k8s-") as directory:
        paths = []
        for index, text in enumerate(texts):
            path = os.path.join(directory, f"{index}.pem")
            with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as handle:
                handle.write(text)
            paths.append(path)
        yield paths


def _config(cluster: Cluster) -> SingleConfig:
    user = User(token=cluster.token) if cluster.token else User()
    return SingleConfig(
        context_name=cluster.name,
        context=Context(cluster=cluster.name, user=cluster.name, namespace="default"),
        # lightkube derives a TLS context of its own from this, which our transport (built with
        # `tls_context`, the one that verifies) replaces; `insecure` only keeps it from loading the
        # system CAs for nothing, ~30 ms on the event loop at every tool call.
        cluster=LkCluster(server=cluster.server, insecure=True),
        user=user,
    )


def client(cluster: Cluster, *, dry_run: bool = False) -> AsyncClient:
    """A lightkube client for one cluster under the egress policy; `dry_run` makes every write
    a server-side dry run (`dryRun=All`)."""
    transport = outbound.AsyncTransport2(verify=tls_context(cluster))
    return AsyncClient(
        config=_config(cluster),
        timeout=httpx2.Timeout(cluster.timeout),
        trust_env=False,
        transport=transport,
        field_manager=FIELD_MANAGER,
        dry_run=dry_run,
    )


def sync_client(cluster: Cluster) -> Client:
    return Client(
        config=_config(cluster),
        timeout=httpx2.Timeout(cluster.timeout),
        trust_env=False,
        transport=outbound.Transport2(verify=tls_context(cluster)),
        field_manager=FIELD_MANAGER,
    )


# --- test connection ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeAnswer:
    ok: bool
    lines: list[str]


def check_connection(source: DataSource) -> ProbeAnswer:
    """Ask the cluster its version and what the token may do (SelfSubjectAccessReview). Only the
    version (when it looks like one) and yes/no answers are shown, never a remote body."""
    try:
        cluster = cluster_of(source)
        version = _version(cluster)
        with contextlib.closing(sync_client(cluster)) as api:
            lines = [gettext("Kubernetes %(version)s") % {"version": version}]
            lines += [_access_line(api, cluster, check) for check in ACCESS_CHECKS]
    except kubeconfig.KubeconfigError as error:
        return ProbeAnswer(False, [str(error)])
    except ApiError as error:  # an httpx2.HTTPStatusError: before the transport failures
        return ProbeAnswer(False, [_refusal(source, error.status.code or 0)])
    except (httpx2.HTTPError, EgressRefused) as error:
        return ProbeAnswer(False, [f"{source.url}: {outbound.failure_reason(error)}"])
    except _Refused as error:
        return ProbeAnswer(False, [_refusal(source, error.status)])
    except ssl.SSLError as error:
        return ProbeAnswer(
            False, [gettext("the CA bundle or client certificate is not valid PEM: %s") % error]
        )
    except _NotKubernetes:
        return ProbeAnswer(
            False, [gettext("%(url)s answers, but not as the Kubernetes API") % {"url": source.url}]
        )
    return ProbeAnswer(True, lines)


class _NotKubernetes(Exception):
    """The URL answers, but not with the Kubernetes API's version."""


class _Refused(Exception):
    """The API server refused the credentials (401) or the call (403)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def _version(cluster: Cluster) -> str:
    """`GET /version` (lightkube has no call for it), with the cluster's transport and token."""
    headers = {"Authorization": f"Bearer {cluster.token}"} if cluster.token else {}
    transport = outbound.Transport2(verify=tls_context(cluster))
    with httpx2.Client(
        transport=transport, trust_env=False, timeout=cluster.timeout, headers=headers
    ) as http:
        response = http.get(cluster.server + "/version")
    if response.status_code in (401, 403):
        raise _Refused(response.status_code)
    try:
        version = response.json().get("gitVersion", "")
    except (ValueError, AttributeError):
        raise _NotKubernetes() from None
    if not isinstance(version, str) or not VERSION.match(version):
        raise _NotKubernetes()
    return version


def _refusal(source: DataSource, status: int) -> str:
    words = {401: gettext("the token is not accepted"), 403: gettext("the token may not do this")}
    reason = outbound.status_reason(status)
    return f"{source.url}: {reason}" + (f" ({words[status]})" if status in words else "")


def _access_line(api: Client, cluster: Cluster, check: tuple) -> str:
    verb, group, resource, subresource, words = check
    namespace = cluster.namespaces[0] if cluster.namespaces else None
    review = SelfSubjectAccessReview(
        spec={
            "resourceAttributes": {
                "verb": verb,
                "group": group,
                "resource": resource,
                "subresource": subresource or None,
                "namespace": namespace,
            }
        }
    )
    answer = api.create(review)
    allowed = bool(answer.status and answer.status.allowed)
    where = namespace or gettext("all namespaces")
    if allowed:
        return gettext("may %(what)s in %(where)s: yes") % {"what": words, "where": where}
    return gettext("may %(what)s in %(where)s: no") % {"what": words, "where": where}
