"""The Reports pages and a run's page. Thin: look rows up in the caller's organization, render.

Every member of an organization (members, auditors, admins) sees its reports and runs; another
organization's row is not in the queryset, so its URL answers 404 like a missing one.
"""

from __future__ import annotations

import datetime as dt

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from schedules_app import figures
from schedules_app.models import Report, ScheduleRun
from schedules_app.runner import report_text
from web_app.charts import line_chart


@login_required
def report_list(request: HttpRequest) -> HttpResponse:
    reports = Report.objects.for_user(request.user).select_related("schedule")[:100]
    runs = ScheduleRun.objects.for_user(request.user).select_related("schedule", "incident")[:50]
    return render(request, "schedules/reports.html", {"reports": reports, "runs": runs})


def _report(request: HttpRequest, report_id: int) -> Report:
    return get_object_or_404(Report.objects.for_user(request.user), pk=report_id)


def _context(report: Report) -> dict:
    f = report.figures
    per_day = f.get("incidents", {}).get("opened_per_day") or []
    series = []
    if len(per_day) >= 2:
        points = [[dt.date.fromisoformat(day).toordinal() * 86400, count] for day, count in per_day]
        series = [{"labels": {"__name__": "incidents opened per day"}, "points": points}]
    inc = f.get("incidents", {})
    return {
        "report": report,
        "f": f,
        "mtta": figures.duration(inc.get("mtta_seconds")),
        "mttr": figures.duration(inc.get("mttr_seconds")),
        "chart": line_chart(series) if series else "",
    }


@login_required
def report_detail(request: HttpRequest, report_id: int) -> HttpResponse:
    return render(request, "schedules/report.html", _context(_report(request, report_id)))


@login_required
def report_print(request: HttpRequest, report_id: int) -> HttpResponse:
    return render(request, "schedules/report_print.html", _context(_report(request, report_id)))


@login_required
def report_markdown(request: HttpRequest, report_id: int) -> HttpResponse:
    report = _report(request, report_id)
    response = HttpResponse(report_text(report), content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="ongrid-report-{report.pk}.md"'
    return response


@login_required
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(
        ScheduleRun.objects.for_user(request.user).select_related("schedule", "incident", "session"),
        pk=run_id,
    )
    return render(request, "schedules/run.html", {"run": run})
