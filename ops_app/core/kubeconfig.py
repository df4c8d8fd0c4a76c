"""Reading a pasted kubeconfig (docs/kubernetes.md): one context's API server and credentials.

Only inline credentials are accepted. A kubeconfig may also name files (`certificate-authority:`,
`tokenFile`, `client-key:`) and commands (`exec:`, `auth-provider:`); on a shared server those would
read Ongrid's own files or run programs on it for whoever pasted the text, so they are refused with
the reason.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml

REFUSED_USER_KEYS = {
    "exec": "runs a command on the Ongrid server",
    "auth-provider": "runs a provider plug-in on the Ongrid server",
    "tokenFile": "reads a file of the Ongrid server",
    "client-certificate": "reads a file of the Ongrid server",
    "client-key": "reads a file of the Ongrid server",
}
REFUSED_CLUSTER_KEYS = {"certificate-authority": "reads a file of the Ongrid server"}


class KubeconfigError(ValueError):
    """The kubeconfig cannot be used; the message says why, in words for the person who pasted it."""


@dataclass(frozen=True)
class ClusterAccess:
    """One context of a kubeconfig: where the API server is and how to prove who we are."""

    context: str
    server: str
    namespace: str = ""
    token: str = field(default="", repr=False)
    ca_pem: str = ""
    client_cert_pem: str = ""
    client_key_pem: str = field(default="", repr=False)
    insecure: bool = False


def parse(text: str, context: str = "") -> ClusterAccess:
    """The credentials of `context` (default: the current-context) of the kubeconfig `text`."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise KubeconfigError(f"the kubeconfig is not valid YAML ({_first_line(error)})") from None
    if not isinstance(document, dict):
        raise KubeconfigError("the kubeconfig is not a YAML mapping")
    chosen = context.strip() or str(document.get("current-context") or "")
    entry = _named(document, "contexts", "context", chosen)
    cluster = _named(document, "clusters", "cluster", str(entry.get("cluster", "")))
    user = _named(document, "users", "user", str(entry.get("user", ""))) if entry.get("user") else {}
    return _access(chosen, entry, cluster, user)


def context_names(text: str) -> list[str]:
    """The contexts a kubeconfig offers (empty when it cannot be read)."""
    try:
        document = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        return []
    items = document.get("contexts") if isinstance(document, dict) else None
    return [str(item.get("name")) for item in items or [] if isinstance(item, dict) and item.get("name")]


def _named(document: dict, section: str, key: str, name: str) -> dict:
    items = document.get(section) or []
    if not name:
        raise KubeconfigError(f"no {key} is chosen: give a context (the kubeconfig has no current-context)")
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and item.get("name") == name and isinstance(item.get(key), dict):
            return item[key]
    names = ", ".join(str(i.get("name")) for i in items if isinstance(i, dict)) or "none"
    raise KubeconfigError(f"the kubeconfig has no {key} named {name!r} (its {section}: {names})")


def _access(context: str, entry: dict, cluster: dict, user: dict) -> ClusterAccess:
    for key, why in REFUSED_CLUSTER_KEYS.items():
        if cluster.get(key):
            raise KubeconfigError(f"`{key}` is refused: it {why}; paste `{key}-data` instead")
    for key, why in REFUSED_USER_KEYS.items():
        if user.get(key):
            raise KubeconfigError(
                f"the user's `{key}` is refused: it {why}; use an inline token or certificate data"
            )
    server = str(cluster.get("server") or "").strip()
    if not server:
        raise KubeconfigError(f"the cluster of context {context!r} has no server")
    token = str(user.get("token") or "")
    cert, key = _pem(user, "client-certificate-data"), _pem(user, "client-key-data")
    if not token and not (cert and key):
        raise KubeconfigError("the user has no token and no client-certificate-data + client-key-data")
    return ClusterAccess(
        context=context,
        server=server.rstrip("/"),
        namespace=str(entry.get("namespace") or ""),
        token=token,
        ca_pem=_pem(cluster, "certificate-authority-data"),
        client_cert_pem=cert,
        client_key_pem=key,
        insecure=bool(cluster.get("insecure-skip-tls-verify")),
    )


def _pem(section: dict, key: str) -> str:
    raw = section.get(key)
    if not raw:
        return ""
    try:
        return base64.b64decode(str(raw), validate=True).decode("ascii")
    except (binascii.Error, UnicodeDecodeError):
        raise KubeconfigError(f"`{key}` is not base64-encoded PEM") from None


def _first_line(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def in_cluster_url(env: Mapping[str, str]) -> str:
    """The API server of the cluster Ongrid's pod runs in (the variables every pod is given)."""
    host = env.get("KUBERNETES_SERVICE_HOST", "").strip()
    if not host:
        return ""
    host = f"[{host}]" if ":" in host else host
    return f"https://{host}:{env.get('KUBERNETES_SERVICE_PORT', '443').strip() or '443'}"
