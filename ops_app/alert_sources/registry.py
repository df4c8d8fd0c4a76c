"""The one table from an alert source's kind to its package (docs/alerts.md, "Alert sources"):
how its deliveries are verified and read, and which `Incident.Source` its incidents carry.
Write-back clients live beside `inbound` in each package (`api.py`): `package_of(kind)`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ops_app.alert_sources.events import AlertEvent
from ops_app.alert_sources.generic import inbound as generic
from ops_app.alert_sources.grafana import inbound as grafana
from ops_app.alert_sources.opsgenie import inbound as opsgenie
from ops_app.alert_sources.pagerduty import inbound as pagerduty
from ops_app.models import AlertSource, Incident


@dataclass(frozen=True)
class SourceKind:
    kind: str  # AlertSource.Kind value, the <kind> of /api/alerts/<kind>/<url key>/
    incident_source: str  # Incident.Source value of the incidents it opens
    # Raises VerificationFailed when the request is not from the source's sender.
    verify: Callable[[AlertSource, Mapping[str, str], bytes], None]
    # Raises PayloadError naming the problem; [] for deliveries that mean nothing to an incident.
    parse: Callable[[object, AlertSource], list[AlertEvent]]

    @property
    def package(self) -> str:
        return f"ops_app.alert_sources.{self.kind}"


KINDS: dict[str, SourceKind] = {
    AlertSource.Kind.PAGERDUTY: SourceKind(
        AlertSource.Kind.PAGERDUTY, Incident.Source.PAGERDUTY, pagerduty.verify_request, pagerduty.parse
    ),
    AlertSource.Kind.OPSGENIE: SourceKind(
        AlertSource.Kind.OPSGENIE, Incident.Source.OPSGENIE, opsgenie.verify_request, opsgenie.parse
    ),
    AlertSource.Kind.GRAFANA: SourceKind(
        AlertSource.Kind.GRAFANA, Incident.Source.GRAFANA, grafana.verify_request, grafana.parse
    ),
    AlertSource.Kind.GENERIC: SourceKind(
        AlertSource.Kind.GENERIC, Incident.Source.WEBHOOK, generic.verify_request, generic.parse
    ),
}


def kind_of(kind: str) -> SourceKind | None:
    return KINDS.get(kind)


def package_of(kind: str) -> str:
    """The dotted package of a kind (`ops_app.alert_sources.pagerduty`), for its `api` module."""
    return KINDS[kind].package
