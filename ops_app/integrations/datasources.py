"""Telemetry data sources of an organization (docs/integrations.md): choosing one, talking to it,
testing it, and the few writes (making one the default, creating the demo organization's).

The tools never read the environment's PROMETHEUS_URL & co. directly: they ask `aendpoint` for
the organization's data source of a kind (by name, or the default). The deployment environment
stays the fallback only for an organization that has no data source of that kind at all, so an
instance configured before data sources existed keeps working.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

import httpx
from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext

from ops_app.core import outbound
from ops_app.core.egress import EgressRefused
from ops_app.models import DataSource, Organization

Kind = DataSource.Kind
ENVIRONMENT = {
    Kind.PROMETHEUS: "prometheus_url",
    Kind.LOKI: "loki_url",
    Kind.TEMPO: "tempo_url",
    Kind.ALERTMANAGER: "alertmanager_url",
}
VARIABLE = {kind: attribute.upper() for kind, attribute in ENVIRONMENT.items()}
# What "Test connection" asks each kind: paths, each with how to recognise the answer (None: any
# 2xx will do). Only the status and that verdict are shown, never the answer itself.
PROBES = {
    Kind.PROMETHEUS: (("/-/ready", None), ("/api/v1/status/buildinfo", "prometheus")),
    Kind.ALERTMANAGER: (("/api/v2/status", "alertmanager"),),
    Kind.LOKI: (("/ready", None),),
    Kind.TEMPO: (("/ready", None),),
}


class UnknownDataSource(LookupError):
    """The model named a data source this organization does not have (the message lists those it has)."""


@dataclass(frozen=True)
class Endpoint:
    """Everything a tool needs to call one back end; secrets only in `headers` / `auth`, never printed."""

    name: str
    url: str
    timeout: float = 10.0
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    auth: tuple[str, str] | None = field(default=None, repr=False)
    verify_tls: bool = True
    ca_bundle: str = ""

    def client(self, timeout: float | None = None) -> httpx.AsyncClient:
        """A client under the egress policy (docs/security.md, "Egress")."""
        return outbound.async_client(
            timeout=timeout or self.timeout, headers=self.headers, auth=self.auth, verify=self._verify()
        )

    def sync_client(self) -> httpx.Client:
        return outbound.client(
            timeout=self.timeout, headers=self.headers, auth=self.auth, verify=self._verify()
        )

    def _verify(self) -> bool | ssl.SSLContext:
        if not self.verify_tls:
            return False
        if self.ca_bundle.strip():
            return ssl.create_default_context(cadata=self.ca_bundle)
        return True


def parse_headers(text: str) -> dict[str, str]:
    """`Name: value` lines (blank lines and lines without a colon are skipped)."""
    headers = {}
    for line in (text or "").splitlines():
        name, sep, value = line.partition(":")
        if sep and name.strip():
            headers[name.strip()] = value.strip()
    return headers


def endpoint_of(source: DataSource) -> Endpoint:
    headers: dict[str, str] = {}
    auth = None
    if source.auth == DataSource.Auth.BEARER and source.secret:
        headers["Authorization"] = f"Bearer {source.secret}"
    elif source.auth == DataSource.Auth.BASIC:
        auth = (source.username, source.secret or "")
    elif source.auth == DataSource.Auth.HEADERS:
        headers.update(parse_headers(source.custom_headers))
    return Endpoint(
        name=source.name,
        url=source.url.split("#")[0].split("?")[0].rstrip("/"),  # a base: paths are appended
        timeout=source.timeout,
        headers=headers,
        auth=auth,
        verify_tls=source.verify_tls,
        ca_bundle=source.ca_bundle,
    )


def configured_in_environment(kind: str) -> bool:
    """True when the deployment names a back end of `kind` for every organization (PROMETHEUS_URL…)."""
    return kind in ENVIRONMENT and _environment_endpoint(kind) is not None


def configured(organization_id: int, kind: str) -> bool:
    """Whether a tool of `kind` has a back end for the organization: one existence query, no
    credentials decrypted (`endpoint` builds the whole connection)."""
    own = DataSource.objects.for_organization(organization_id).filter(kind=kind)
    return configured_in_environment(kind) or own.exists()


def _environment_endpoint(kind: str) -> Endpoint | None:
    url = getattr(settings.CONFIG, ENVIRONMENT[kind])
    return Endpoint(name="environment", url=url.rstrip("/")) if url else None


def _choose(sources: list[DataSource], kind: str, name: str | None) -> Endpoint | None:
    if name:
        for source in sources:
            if source.name == name:
                return endpoint_of(source)
        listing = ", ".join(s.name for s in sources) or "none"
        raise UnknownDataSource(
            f"there is no {Kind(kind).label} data source named {name!r} in this organization "
            f"(its {Kind(kind).label} data sources: {listing})"
        )
    if not sources:
        return _environment_endpoint(kind)
    default = next((s for s in sources if s.is_default), sources[0])
    return endpoint_of(default)


def endpoint(organization_id: int, kind: str, name: str | None = None) -> Endpoint | None:
    """The data source `name` (or the default) of `kind` for the organization; None when none is
    configured anywhere. Raises UnknownDataSource for a name the organization does not have."""
    sources = list(DataSource.objects.for_organization(organization_id).filter(kind=kind))
    return _choose(sources, kind, name)


async def aendpoint(organization_id: int, kind: str, name: str | None = None) -> Endpoint | None:
    sources = [s async for s in DataSource.objects.for_organization(organization_id).filter(kind=kind)]
    return _choose(sources, kind, name)


async def anames(organization_id: int) -> dict[str, list[str]]:
    """{kind: [names, default first]} of the organization's data sources."""
    found: dict[str, list[str]] = {}
    query = DataSource.objects.for_organization(organization_id).order_by("-is_default", "name")
    async for kind, name in query.values_list("kind", "name"):
        found.setdefault(kind, []).append(name)
    return found


# --- writes ---------------------------------------------------------------------------------------


@transaction.atomic
def save_data_source(source: DataSource) -> DataSource:
    """Save, keeping exactly one default per organization and kind: a new default replaces the old
    one, and the first data source of a kind becomes the default."""
    siblings = DataSource.objects.for_organization(source.organization_id).filter(kind=source.kind)
    if source.pk:
        siblings = siblings.exclude(pk=source.pk)
    if not siblings.filter(is_default=True).exists():
        source.is_default = True
    elif source.is_default:
        for other in siblings.filter(is_default=True):
            other.is_default = False
            other.save(update_fields=["is_default", "updated_at"])
    source.save()
    return source


def create_from_environment(organization: Organization) -> list[DataSource]:
    """The demo organization's data sources from PROMETHEUS_URL & co. (skips kinds it already has)."""
    created = []
    for kind, attribute in ENVIRONMENT.items():
        url = getattr(settings.CONFIG, attribute)
        if not url or DataSource.objects.for_organization(organization).filter(kind=kind).exists():
            continue
        source = DataSource(organization=organization, kind=kind, name=kind, url=url, is_default=True)
        created.append(save_data_source(source))
    return created


# --- test connection ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProbeAnswer:
    ok: bool
    lines: list[str]


def check_connection(source: DataSource) -> ProbeAnswer:
    """Ask the back end its readiness / status endpoints. The admin is shown the status of each
    answer and whether it is the API of that kind, or a short reason (refused by the egress policy,
    connection refused, TLS error...). Never the answer's body: a URL pointing at some internal
    service must not make Ongrid read that service out to the admin."""
    target = endpoint_of(source)
    lines, ok = [], True
    try:
        with target.sync_client() as client:
            for path, api in PROBES[source.kind]:
                response = client.get(target.url + path)
                recognised, verdict = _verdict(response, api)
                lines.append(f"GET {path}: {verdict}")
                ok = ok and recognised
    except (httpx.HTTPError, EgressRefused) as error:
        lines.append(f"{target.url}: {outbound.failure_reason(error)}")
        ok = False
    except ssl.SSLError as error:  # building the TLS context, before any connection
        lines.append(f"the CA bundle is not valid PEM: {error}")
        ok = False
    return ProbeAnswer(ok, lines)


def _verdict(response: httpx.Response, api: str | None) -> tuple[bool, str]:
    """(is it the back end we expect, the words that say so); a 2xx is all a readiness path gives."""
    status = response.status_code
    if api is None or not response.is_success:
        return response.is_success, outbound.status_reason(status)
    values = {"status": status, "kind": Kind(api).label}
    if _speaks(response, api):
        return True, gettext("HTTP %(status)s, the %(kind)s API") % values
    return False, gettext("HTTP %(status)s, but not the %(kind)s API") % values


def _speaks(response: httpx.Response, api: str) -> bool:
    try:
        body = response.json()
    except ValueError:
        return False
    if not isinstance(body, dict):
        return False
    if api == Kind.PROMETHEUS:
        return (
            body.get("status") == "success"
            and isinstance(body.get("data"), dict)
            and "version" in body["data"]
        )
    return "versionInfo" in body or "cluster" in body  # Alertmanager's /api/v2/status
