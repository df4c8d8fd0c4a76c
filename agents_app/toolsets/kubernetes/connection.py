"""The write tools' way to the organization's cluster (docs/kubernetes.md): which cluster, whether
the organization lets its agents into the namespace, and a client that is closed after use.

The namespace check runs before any request is made, so a call into a namespace the data source
does not list never reaches the API server, not even as a dry run.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from lightkube import AsyncClient
from lightkube.core.exceptions import ApiError

from agents_app.toolsets.contract import ToolContext, ToolError
from audit_app.redaction import redact_text
from ops_app.core import kubeconfig
from ops_app.core.text import cut_at_word
from ops_app.integrations import kubernetes
from ops_app.integrations.datasources import UnknownDataSource
from ops_app.integrations.kubernetes import Cluster

MESSAGE_CHARS = 400  # of the API server's own message in a tool error or a dry run's summary


async def cluster_for(ctx: ToolContext, name: str | None, namespace: str) -> Cluster:
    """The organization's cluster `name` (or its default), once `namespace` is known to be allowed.

    Raises ToolError for no cluster, an unknown name (listing the organization's clusters), an
    unreadable kubeconfig or a namespace outside the cluster's list.
    """
    try:
        cluster = await kubernetes.acluster(ctx.organization_id, name or None)
    except UnknownDataSource as error:
        raise ToolError(str(error)) from None
    except kubeconfig.KubeconfigError as error:
        raise ToolError(f"the cluster's kubeconfig cannot be used: {error}") from None
    if cluster is None:
        raise ToolError(
            "no Kubernetes cluster is configured for this organization (no data source of kind kubernetes)"
        )
    if not cluster.allows(namespace):
        allowed = ", ".join(cluster.namespaces)
        raise ToolError(
            f"namespace {namespace!r} is not one this organization lets agents change on cluster "
            f"{cluster.name!r} (allowed: {allowed})"
        )
    return cluster


@contextlib.asynccontextmanager
async def connected(cluster: Cluster, *, dry_run: bool = False) -> AsyncIterator[AsyncClient]:
    """A client of `cluster` (every write a server-side dry run when `dry_run`), closed on exit."""
    api = kubernetes.client(cluster, dry_run=dry_run)
    try:
        yield api
    finally:
        await api.close()


def api_error_text(error: ApiError) -> str:
    """An API refusal in one line: code, reason and the server's message (masked and cut)."""
    status = error.status
    code = getattr(status, "code", None) or ""
    reason = getattr(status, "reason", None) or ""
    words = " ".join(str(getattr(status, "message", "") or "").split())
    message = cut_at_word(redact_text(words), MESSAGE_CHARS)
    head = " ".join(str(part) for part in (code, reason) if part) or "error"
    return f"{head}: {message}" if message else head
