"""The admin's Evaluations pages: the stored runs (the leaderboard) and runs compared side by side.

Runs are platform data (docs/evals.md, "Leaderboard"): they grade models, not an organization's
estate, so only platform staff (superusers) see them. Runs are written by `manage.py
ongrid_eval`, never edited here; deleting old ones is allowed.
"""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from chat_app.models import ChatSession
from evals_app import leaderboard
from evals_app.models import EvalRun, EvalScenarioResult
from web_app.charts import line_chart

MAX_COMPARED = 6


class PlatformStaffOnly:
    def has_module_permission(self, request: HttpRequest) -> bool:
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_active and request.user.is_superuser

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj=None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj=None) -> bool:
        return request.user.is_active and request.user.is_superuser


class ResultInline(PlatformStaffOnly, admin.TabularInline):
    model = EvalScenarioResult
    fields = (
        "scenario",
        "category",
        "attempt",
        "passed",
        "f1",
        "tool_calls",
        "tokens",
        "cost_usd",
        "latency_s",
    )
    readonly_fields = fields
    extra = 0
    can_delete = False


@admin.register(EvalRun)
class EvalRunAdmin(PlatformStaffOnly, admin.ModelAdmin):
    list_display = (
        "pk", "model", "started_at", "suite_version", "passed", "runs", "pass_rate", "macro_f1", "tokens",
        "cost_usd",
    )  # fmt: skip
    list_filter = ("model", "suite_version", "live")
    readonly_fields = [f.name for f in EvalRun._meta.fields]
    inlines = (ResultInline,)
    actions = ("compare_runs",)

    class Media:
        css = {"all": ("css/evals_admin.css",)}

    @admin.action(description=gettext_lazy("Compare selected runs"), permissions=["view"])
    def compare_runs(self, request: HttpRequest, queryset) -> HttpResponse:
        ids = sorted(queryset.values_list("pk", flat=True))[:MAX_COMPARED]
        return redirect(f"{reverse('admin:evals_app_evalrun_compare')}?{'&'.join(f'run={i}' for i in ids)}")

    def get_urls(self):
        own = [
            path("compare/", self.admin_site.admin_view(self.compare_view), name="evals_app_evalrun_compare")
        ]
        return own + super().get_urls()

    def compare_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_view_permission(request):
            raise PermissionDenied
        ids = [int(i) for i in request.GET.getlist("run") if i.isdigit()][:MAX_COMPARED]
        found = {run.pk: run for run in EvalRun.objects.filter(pk__in=ids)}
        runs = [found[i] for i in ids if i in found]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Compare evaluation runs"),
            "runs": runs,
            "categories": _category_rows(runs),
            "scenarios": _scenario_rows(runs),
            "trend": _trend(runs),
            "media": self.media,
        }
        return TemplateResponse(request, "admin/evals_app/evalrun/compare.html", context)


def _category_rows(runs: list[EvalRun]) -> list[dict]:
    """One row per category: each run's figures, and the change from the first run."""
    table = leaderboard.comparison(runs)
    rows = []
    for name, figures in table["categories"].items():
        first = figures[0] if figures else None
        cells = []
        for figure in figures:
            delta = None
            if figure is not None and first is not None:
                delta = round((figure["pass_rate"] - first["pass_rate"]) * 100)
            cells.append({"figures": figure, "delta": delta})
        rows.append({"category": name, "cells": cells})
    return rows


def _scenario_rows(runs: list[EvalRun]) -> list[dict]:
    """One row per scenario: each run's first attempt, with a link to its session when it is kept."""
    results = list(EvalScenarioResult.objects.filter(run__in=runs, attempt=1))
    kept = set(
        ChatSession.objects.filter(pk__in=[r.session_id for r in results if r.session_id]).values_list(
            "pk", flat=True
        )
    )
    by_key = {(r.run_id, r.scenario): r for r in results}
    rows = []
    for scenario in sorted({r.scenario for r in results}):
        cells = []
        for run in runs:
            result = by_key.get((run.pk, scenario))
            link = (
                reverse("audit-session", args=[result.session_id])
                if result is not None and result.session_id in kept
                else ""
            )
            cells.append({"result": result, "link": link})
        first = next((c["result"] for c in cells if c["result"] is not None), None)
        changed = len({c["result"].passed for c in cells if c["result"] is not None}) > 1
        rows.append({"scenario": scenario, "category": first.category, "cells": cells, "changed": changed})
    return rows


def _trend(runs: list[EvalRun]) -> str:
    """Pass rate and macro-F1 over the compared runs, in the order given (a line per figure)."""
    if len(runs) < 2:
        return ""
    series = [
        {"labels": {"__name__": _("pass rate")}, "points": [[i, r.pass_rate] for i, r in enumerate(runs, 1)]},
        {
            "labels": {"__name__": _("macro-F1")},
            "points": [[i, r.macro_f1] for i, r in enumerate(runs, 1) if r.macro_f1 is not None],
        },
    ]
    return line_chart([s for s in series if len(s["points"]) >= 2])
