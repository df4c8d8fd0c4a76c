"""Ongrid's admin site: its own branding, and an index grouped by what an admin does rather than
by Django app (ops_app alone holds the estate, the integrations and the tenancy tables).

The groups are listed here by model label; the URLs stay Django's (`/admin/<app>/<model>/`).
Third-party tables (django-axes' lock-outs, django-celery-beat's schedules, which Ongrid's own
Schedules drive) are left out of the index for everyone but superusers, who find them folded
into a last "Internals" group; any model no group names lands there too, so nothing is lost."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _

# (key, heading, model labels in the order shown)
GROUPS = (
    (
        "agents",
        _("Agents"),
        (
            "agents_app.useragent",
            "agents_app.userskill",
            "agents_app.pack",
            "agents_app.trustedpackkey",
            "agents_app.mutatingproposal",
            "incidents_app.investigationpolicy",
            "incidents_app.investigation",
        ),
    ),
    (
        "estate",
        _("Estate"),
        (
            "ops_app.device",
            "ops_app.incident",
            "ops_app.alert",
            "ops_app.alertrule",
            "ops_app.changeevent",
            "ops_app.topologynode",
            "ops_app.topologyedge",
            "ops_app.knowledgedocument",
            "ops_app.vaultrepository",
        ),
    ),
    (
        "integrations",
        _("Integrations"),
        ("ops_app.datasource", "ops_app.llmendpoint", "ops_app.mcpserver"),
    ),
    (
        "alerts",
        _("Alerts"),
        (
            "ops_app.alertmanagerreceiver",
            "ops_app.alertsource",
            "incidents_app.notificationrule",
            "incidents_app.notificationchannel",
            "incidents_app.notificationdelivery",
            "incidents_app.sourcewriteback",
        ),
    ),
    ("chat-apps", _("Chat apps"), ("im_app.imapp", "im_app.imidentity", "im_app.outboxmessage")),
    (
        "schedules",
        _("Schedules"),
        ("schedules_app.schedule", "schedules_app.schedulerun", "schedules_app.report"),
    ),
    ("audit", _("Audit"), ("chat_app.chatsession", "audit_app.auditlog", "audit_app.llmcall")),
    ("evaluations", _("Evaluations"), ("evals_app.evalrun",)),
    (
        "access",
        _("Access"),
        ("auth.user", "auth.group", "ops_app.organization", "ops_app.membership", "ops_app.apitoken"),
    ),
)
INTERNALS = ("internals", _("Internals"))
# Apps whose tables only a superuser is shown: libraries' bookkeeping, not Ongrid's settings.
THIRD_PARTY_APPS = frozenset({"axes", "django_celery_beat"})


class OngridAdminSite(admin.AdminSite):
    site_header = _("Ongrid administration")
    site_title = _("Ongrid admin")
    index_title = _("Administration")

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[dict]:
        """The index (and the sidebar) grouped as `GROUPS`; one app's page stays Django's."""
        apps = super().get_app_list(request, app_label)
        if app_label is not None:
            return apps
        return grouped(apps, superuser=request.user.is_superuser)


def grouped(apps: list[dict], *, superuser: bool) -> list[dict]:
    """Django's per-app list regrouped: each group's models in `GROUPS` order, empty groups left
    out, the rest (third-party tables for superusers only) in "Internals" at the end."""
    by_label: dict[str, tuple[dict, dict]] = {}
    for app in apps:
        for model in app["models"]:
            by_label[model["model"]._meta.label_lower] = (app, model)
    groups = []
    for key, heading, labels in GROUPS:
        models = [by_label.pop(label)[1] for label in labels if label in by_label]
        if models:
            groups.append(_group(key, heading, models))
    leftover = [
        model for app, model in by_label.values() if superuser or app["app_label"] not in THIRD_PARTY_APPS
    ]
    if leftover:
        groups.append(_group(*INTERNALS, leftover))
    return groups


def _group(key: str, heading, models: list[dict]) -> dict:
    return {
        "name": heading,
        "app_label": key,  # the module's CSS class (app-<key>) and the rows' ids
        "app_url": f"#{key}",
        "has_module_perms": True,
        "models": models,
    }
