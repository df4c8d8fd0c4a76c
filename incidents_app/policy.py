"""Which incidents an organization investigates on its own (docs/investigations.md, "Policy")."""

from __future__ import annotations

from incidents_app.models import InvestigationPolicy
from ops_app.models import SEVERITY_RANK, Incident


def policy_for(organization_id: int) -> InvestigationPolicy:
    """The organization's policy, or an unsaved one with the defaults when none was set."""
    found = InvestigationPolicy.objects.filter(organization_id=organization_id).first()
    return found or InvestigationPolicy(organization_id=organization_id)


def severity_at_least(severity: str, threshold: str) -> bool:
    return SEVERITY_RANK.get(severity, 99) <= SEVERITY_RANK.get(threshold, 99)


def matches(policy: InvestigationPolicy, incident: Incident) -> bool:
    """True when the policy wants this incident investigated without anyone asking."""
    if not policy.enabled or not severity_at_least(incident.severity, policy.min_severity):
        return False
    if policy.services and not set(policy.services) & set(incident.affected_services or []):
        return False
    if policy.label_matchers:
        wanted = {str(k): str(v) for k, v in policy.label_matchers.items()}
        labels = [a.labels for a in incident.alerts.all()]
        if not any(all(lab.get(k) == v for k, v in wanted.items()) for lab in labels):
            return False
    return True


def fingerprint_of(incident: Incident) -> str:
    """What the cooldown is keyed on: the Alertmanager group, or the incident itself."""
    return incident.fingerprint or f"incident:{incident.pk}"
