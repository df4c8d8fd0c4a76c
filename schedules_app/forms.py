"""The schedule form of the admin: a picker of the personas that can really run the schedule,
instead of free text that a typo turns into a failed run at 03:00 (docs/schedules.md).

Inspections run a read-only specialist; reports always run `reporter`. The picker groups the
choices by kind (the admin form cannot re-filter them when "kind" changes without scripts), and
`clean` refuses a persona of the other kind with a message that says which one fits.
"""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents_app.api import get_registry
from schedules_app.models import Schedule
from schedules_app.runner import REPORTER

# Read-only personas that are not inspectors: the reviewer judges proposals, the reporter writes reports.
NOT_INSPECTORS = frozenset({REPORTER, "reviewer"})


def inspection_personas(organization_id: int | None) -> list[tuple[str, str]]:
    """(name, label) of the personas an inspection may run for the organization (built-in ones
    only while no organization is known yet)."""
    registry = get_registry(organization_id)
    return [
        (p.name, f"{p.name} — {p.description}" if p.description else p.name)
        for p in registry.all()
        if p.permission_mode == "read-only" and not p.is_coordinator and p.name not in NOT_INSPECTORS
    ]


class ScheduleForm(forms.ModelForm):
    persona = forms.ChoiceField(
        label=_("persona"),
        required=False,
        help_text=_("Inspections: the read-only specialist that runs it. Reports always use `reporter`."),
    )

    class Meta:
        model = Schedule
        # The admin's fieldsets choose what shows; this is what the form may write.
        fields = (
            "organization",
            "name",
            "kind",
            "enabled",
            "persona",
            "prompt",
            "open_incidents",
            "period",
            "cron",
            "interval_minutes",
            "timezone",
            "email_to",
            "webhook_url",
            "webhook_secret",
            "deliver_to_im",
        )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        inspectors = inspection_personas(self._organization_id())
        current = self.instance.persona if self.instance.pk else ""
        if current and current != REPORTER and current not in dict(inspectors):
            inspectors.append((current, current))  # an existing schedule keeps its persona visible
        self.fields["persona"].choices = [
            ("", "—"),
            (gettext("Inspection"), inspectors),
            (gettext("Report"), [(REPORTER, REPORTER)]),
        ]
        if not self.instance.pk:
            self.initial["persona"] = ""

    def _organization_id(self) -> int | None:
        """Whose personas to offer: the row's organization, else the one platform staff chose in
        this very form (so its own agents validate), else the editor's (`TenantScopedAdmin.get_form`)."""
        if self.instance.organization_id:
            return self.instance.organization_id
        # Only a form that has the field (platform staff's) may name another organization: an org
        # admin's forged `organization` must not list another tenant's agents.
        offered = self.is_bound and "organization" in self.fields
        chosen = str(self.data.get("organization", "")) if offered else ""
        if chosen.isdigit():
            return int(chosen)
        editor_organization = getattr(self, "organization", None)
        return editor_organization.pk if editor_organization is not None else None

    def clean(self) -> dict:
        data = super().clean()
        kind, persona = data.get("kind"), data.get("persona") or ""
        if kind == Schedule.Kind.REPORT:
            data["persona"] = REPORTER
            self.instance.persona = REPORTER
        elif kind == Schedule.Kind.INSPECTION and persona in ("", REPORTER):
            self.add_error("persona", _("Choose the read-only specialist that runs the inspection."))
        return data
