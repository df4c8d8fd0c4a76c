"""Reaching the organization's cluster from a tool: which cluster, which namespaces, and the
failures a model can act on.

The cluster is the organization's data source of kind `kubernetes` (ops_app.integrations.kubernetes
builds the client; the tools never see a credential). Every failure becomes a ToolError in words
the model can use: the API server's own `Status.message` (it is the cluster's answer about the
call, e.g. a read-only token's 403), or the kind of transport failure. A token never appears.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import httpx2
from lightkube import AsyncClient
from lightkube.core.exceptions import ApiError
from lightkube.core.generic_client import ALL_NS

from agents_app.toolsets.contract import ToolContext, ToolError
from audit_app.redaction import redact_text
from ops_app.core import kubeconfig, outbound
from ops_app.core.egress import EgressRefused
from ops_app.core.text import cut_at_word
from ops_app.integrations import kubernetes
from ops_app.integrations.datasources import UnknownDataSource
from ops_app.integrations.kubernetes import Cluster

ALL = "all"
MESSAGE_CHARS = 400  # of the API server's own message in a dry run's summary


def not_configured() -> dict:
    """The answer when the organization has no cluster: the model should stop trying."""
    return {
        "status": "not_configured",
        "message": "Kubernetes is not configured for this organization (no data source of kind "
        "kubernetes); no cluster can be read.",
    }


async def cluster_of(ctx: ToolContext, name: str | None) -> Cluster | None:
    """The organization's cluster `name` (or its default); None when it has none."""
    try:
        return await kubernetes.acluster(ctx.organization_id, name or None)
    except UnknownDataSource as unknown:
        raise ToolError(str(unknown)) from None
    except kubeconfig.KubeconfigError as error:
        raise ToolError(f"the cluster's kubeconfig cannot be used: {error}") from None


async def cluster_for_change(ctx: ToolContext, name: str | None, namespace: str) -> Cluster:
    """The cluster a write goes to, once `namespace` is known to be allowed: checked before any
    request, so a call into a namespace the data source does not list never reaches the API
    server, not even as a dry run."""
    cluster = await cluster_of(ctx, name)
    if cluster is None:
        raise ToolError(
            "no Kubernetes cluster is configured for this organization (no data source of kind kubernetes)"
        )
    check_namespace(cluster, namespace)
    return cluster


def namespaces(cluster: Cluster, namespace: str | None) -> list[str]:
    """The namespaces one call reads: the one asked for (when the cluster allows it), else every
    allowed one, or all namespaces (lightkube's `*`) on an unrestricted cluster."""
    if namespace:
        check_namespace(cluster, namespace)
        return [namespace]
    return list(cluster.namespaces) or [ALL_NS]


def check_namespace(cluster: Cluster, namespace: str) -> None:
    """Refuse a namespace the organization keeps its agents out of, naming those it allows."""
    if not cluster.allows(namespace):
        allowed = ", ".join(cluster.namespaces)
        raise ToolError(
            f"namespace {namespace!r} is not allowed on cluster {cluster.name!r} (allowed: {allowed})"
        )


def label(namespace: str | None) -> str:
    """How a result names the namespaces it covers."""
    return namespace or ALL


@contextlib.asynccontextmanager
async def opened(cluster: Cluster, *, dry_run: bool = False) -> AsyncIterator[AsyncClient]:
    """A lightkube client for `cluster` (every write a server-side dry run when `dry_run`),
    closed after use; its failures are the caller's to word."""
    client = kubernetes.client(cluster, dry_run=dry_run)
    try:
        yield client
    finally:
        await client.close()


@contextlib.asynccontextmanager
async def api(cluster: Cluster) -> AsyncIterator[AsyncClient]:
    """A lightkube client for `cluster`, closed after use; its failures become ToolErrors."""
    async with opened(cluster) as client:
        try:
            yield client
        except ApiError as error:
            raise api_error(cluster, error) from None
        except httpx2.HTTPStatusError as error:
            status = error.response.status_code
            raise ToolError(
                f"cluster {cluster.name!r} answered HTTP {status} (not a Kubernetes Status)"
            ) from None
        except EgressRefused as refused:
            raise ToolError(_refused(cluster, refused)) from None
        except httpx2.TimeoutException:
            raise ToolError(f"cluster {cluster.name!r} did not answer within {cluster.timeout:g} s") from None
        except httpx2.HTTPError as error:
            refused = outbound.cause_of(error, EgressRefused)
            if refused is not None:
                raise ToolError(_refused(cluster, refused)) from None
            raise ToolError(f"cluster {cluster.name!r} is unreachable at {cluster.server}: {error}") from None


def api_error(cluster: Cluster, error: ApiError) -> ToolError:
    """The API server's own refusal, with its status code (401 says the token is not accepted)."""
    code = error.status.code or error.response.status_code
    message = _message(error, 1000) or (error.status.reason or "")
    hint = (
        " (the token is not accepted: ask an admin to check the cluster's credentials)" if code == 401 else ""
    )
    return ToolError(f"cluster {cluster.name!r} returned HTTP {code}{hint}: {message}")


def api_error_text(error: ApiError) -> str:
    """An API refusal in one line, for a dry run's summary: code, reason and the server's message."""
    status = error.status
    head = " ".join(str(part) for part in (status.code, status.reason) if part) or "error"
    message = _message(error, MESSAGE_CHARS)
    return f"{head}: {message}" if message else head


def _message(error: ApiError, limit: int) -> str:
    """The server's own message about the call, masked for credential shapes and cut at a word."""
    words = " ".join(str(error.status.message or "").split())
    return cut_at_word(redact_text(words), limit)


def _refused(cluster: Cluster, refused: EgressRefused) -> str:
    return f"cluster {cluster.name!r} at {cluster.server} is refused by the egress policy: {refused.reason}"
