"""Who sees and acts on incidents: members of the incident's organization (platform staff see
every organization); auditors read but do not start investigations or change incidents."""

from __future__ import annotations

from django.http import Http404
from django.utils.translation import gettext as _

from ops_app.models import Incident
from ops_app.tenancy import roles


def visible_incidents(user):
    return Incident.objects.for_user(user).select_related("device")


def incident_or_404(user, incident_id: int) -> Incident:
    incident = visible_incidents(user).filter(pk=incident_id).first()
    if incident is None:
        raise Http404(_("No such incident."))
    return incident


def may_act(user) -> bool:
    """Read-only auditors may not; everyone else who sees the incident may."""
    names = set(user.groups.values_list("name", flat=True))
    return user.is_superuser or not (names and names <= {roles.AUDITOR})
