"""Executing one claimed run: an inspection (a read-only persona, ended by `submit_finding`) or a
report (exact figures, then the `reporter` persona's narrative), then delivery.

Runs are executed by whoever claimed them (scheduler.dispatch): a Celery worker or the server's
event loop. The agent runs in a root session of kind `work` with no user, linked from the run row.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging

from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext

from agents_app.api import aget_registry, build_toolbag, get_runtime, load_builtin_tools
from chat_app import services as sessions
from ops_app.estate import incidents
from ops_app.estate.change_events import Actor
from schedules_app import delivery, figures, findings, timing
from schedules_app.models import Report, Schedule, ScheduleRun

log = logging.getLogger(__name__)

REPORTER = "reporter"
SEVERITY_OF = {"problem": "critical", "warning": "warning"}


class RunError(Exception):
    """The run cannot go on (unknown or writable persona...); the message is shown on the run."""


def execute_run(run_id: int) -> None:
    async_to_sync(aexecute_run)(run_id)


async def aexecute_run(run_id: int) -> None:
    """Run `run_id` to a terminal state; never raises (a failure is recorded on the run)."""
    started = await sync_to_async(_start)(run_id)
    if started is None:
        return
    run, schedule = started
    try:
        if schedule.kind == Schedule.Kind.REPORT:
            message = await _report(run, schedule)
        else:
            message = await _inspection(run, schedule)
        outcomes = await sync_to_async(delivery.deliver)(schedule, message)
        await sync_to_async(_finish)(run.pk, ScheduleRun.State.FINISHED, deliveries=outcomes)
    except Exception as exc:  # noqa: BLE001 - a scheduled job must leave a readable failure
        if not isinstance(exc, RunError):
            log.exception("schedule run %s failed", run_id)
        await sync_to_async(_finish)(run.pk, ScheduleRun.State.FAILED, error=f"{exc}")


def _start(run_id: int) -> tuple[ScheduleRun, Schedule] | None:
    """Queued → running, once: a run handed to two executors runs in one."""
    moved = ScheduleRun.objects.filter(pk=run_id, state=ScheduleRun.State.QUEUED).update(
        state=ScheduleRun.State.RUNNING, started_at=timezone.now()
    )
    if moved != 1:
        return None
    run = ScheduleRun.objects.select_related("schedule").get(pk=run_id)
    return run, run.schedule


def _finish(run_id: int, state: str, *, deliveries: dict | None = None, error: str = "") -> None:
    with transaction.atomic():
        run = ScheduleRun.objects.select_for_update().get(pk=run_id)
        run.state = state
        run.error = error[:4000]
        run.deliveries = deliveries or {}
        run.finished_at = timezone.now()
        run.save(update_fields=["state", "error", "deliveries", "finished_at"])
        last = run.finding or state
        Schedule.objects.filter(pk=run.schedule_id).update(last_status=last)


def _record(run_id: int, **fields) -> None:
    ScheduleRun.objects.filter(pk=run_id).update(**fields)


async def _persona(organization_id: int, name: str):
    persona = (await aget_registry(organization_id)).by_name(name)
    if persona is None:
        raise RunError(f"No persona named {name!r} is loaded for this organization.")
    if persona.permission_mode != "read-only" or persona.is_coordinator:
        raise RunError(
            f"Persona {name!r} is not a read-only specialist; schedules run read-only personas only."
        )
    return persona


# ---- inspections -----------------------------------------------------------------------------


async def _inspection(run: ScheduleRun, schedule: Schedule) -> delivery.Message:
    persona = await _persona(schedule.organization_id, schedule.persona)
    prompt = schedule.prompt.strip() + findings.INSTRUCTION
    session = await sessions.aopen_work_session(
        schedule.organization_id, persona.name, f"Scheduled inspection: {schedule.name}", prompt
    )
    await sync_to_async(_record)(run.pk, session_id=session.pk)
    holder: dict = {}
    tools = build_toolbag(persona, load_builtin_tools(), coordinator=False) + [findings.finding_tool(holder)]
    outcome = await get_runtime().run_detached(session, persona, prompt, tools)
    finding = holder.get("finding")
    if finding is None:
        # The agent never classified its result: shown as a warning so a human reads it.
        why = outcome.error or "the agent ended without calling submit_finding"
        finding = {
            "status": "warning",
            "summary": f"Unclassified result ({why}). {outcome.text}"[:2000],
            "findings": [],
        }
    incident, opened = None, False
    if finding["status"] == "problem" and schedule.open_incidents:
        incident, opened = await sync_to_async(incidents.open_manual)(
            schedule.organization_id,
            title=f"{schedule.name}: {finding['summary']}"[:300],
            summary=_finding_text(finding),
            fingerprint=findings.problem_fingerprint(schedule.pk, finding),
            severity=SEVERITY_OF["problem"],
            actor=Actor(None, f"schedule {schedule.name}"),
        )
    await sync_to_async(_record)(
        run.pk,
        finding=finding["status"],
        summary=finding["summary"],
        findings=finding["findings"],
        incident=incident,
        incident_opened=opened,
    )
    title = f"{schedule.name}: {finding['status'].upper()}"
    text = _finding_text(finding) + (f"\n\nIncident #{incident.pk}" if incident else "")

    def local() -> tuple[str, str]:
        """The inspection's title and text in the active language (the agent's own words stay
        as written), for the e-mail and the IM copies."""
        local_title = f"{schedule.name}: {_finding_label(finding['status']).upper()}"
        body = _finding_text(finding, translated=True)
        if incident:
            body += "\n\n" + gettext("Incident #%(number)s") % {"number": incident.pk}
        return local_title, body

    def email() -> tuple[str, str]:
        local_title, body = local()
        return f"[Ongrid] {local_title}", body

    return delivery.Message(
        subject=f"[Ongrid] {title}",
        text=text,
        email=email,
        im=local,
        title=title,
        markdown=text,
        url=page_url(reverse("schedule-run", args=[run.pk])),
        status=finding["status"],
        kind=schedule.kind,
        payload={
            "type": "inspection",
            "organization": schedule.organization_id,
            "schedule": {"id": schedule.pk, "name": schedule.name},
            "run": {"id": run.pk, "due_at": run.due_at.isoformat(), "trigger": run.trigger},
            "status": finding["status"],
            "summary": finding["summary"],
            "findings": finding["findings"],
            "incident": incident.pk if incident else None,
        },
    )


def _finding_text(finding: dict, translated: bool = False) -> str:
    """A finding as plain text; `translated`: the fixed words in the active language."""
    status = f"Status: {finding['status']}"
    if translated:
        status = gettext("Status: %(status)s") % {"status": _finding_label(finding["status"])}
    lines = [status, finding["summary"], ""]
    for item in finding.get("findings") or []:
        if isinstance(item, dict):
            target = f" [{item.get('target')}]" if item.get("target") else ""
            lines.append(
                f"- ({item.get('severity', '?')}) {item.get('title', '')}{target}: {item.get('evidence', '')}"
            )
    return "\n".join(lines).strip()


def _finding_label(status: str) -> str:
    """The finding's name in the active language (`ok` → "OK", `problem` → "Problem")."""
    return str(ScheduleRun.Finding(status).label) if status in ScheduleRun.Finding.values else status


# ---- reports ---------------------------------------------------------------------------------


async def _report(run: ScheduleRun, schedule: Schedule) -> delivery.Message:
    start, end = timing.report_window(schedule.period, schedule.timezone, run.due_at)
    numbers = await sync_to_async(figures.compute)(schedule.organization_id, start, end)
    narrative = ""
    try:
        persona = await _persona(schedule.organization_id, REPORTER)
        prompt = _report_prompt(schedule, numbers)
        session = await sessions.aopen_work_session(
            schedule.organization_id, persona.name, f"Scheduled report: {schedule.name}", prompt
        )
        await sync_to_async(_record)(run.pk, session_id=session.pk)
        tools = within_window(build_toolbag(persona, load_builtin_tools(), coordinator=False), start, end)
        outcome = await get_runtime().run_detached(session, persona, prompt, tools)
        narrative = outcome.text if outcome.status == "completed" else ""
        if not narrative:
            why = outcome.error or "no answer"
            narrative = f"(The reporter could not write a narrative: {why}. The figures stand.)"
    except RunError as exc:
        narrative = f"(No narrative: {exc} The figures stand.)"
    report = await sync_to_async(Report.objects.create)(
        organization_id=schedule.organization_id,
        schedule=schedule,
        run=run,
        period=schedule.period,
        period_start=start,
        period_end=end,
        figures=numbers,
        narrative=narrative,
    )
    await sync_to_async(_record)(run.pk, summary=str(report))
    return delivery.Message(
        subject=f"[Ongrid] {report}",
        text=report_text(report),
        email=lambda: (f"[Ongrid] {report}", report_text(report)),
        im=lambda: (str(report), report_brief(report)),
        title=str(report),
        markdown=report_brief(report),
        url=page_url(reverse("report", args=[report.pk])),
        status="report",
        kind=schedule.kind,
        payload={
            "type": "report",
            "organization": schedule.organization_id,
            "schedule": {"id": schedule.pk, "name": schedule.name},
            "report": {
                "id": report.pk,
                "period": report.period,
                "start": start.isoformat(),
                "end": end.isoformat(),
            },
            "figures": numbers,
            "narrative": narrative,
        },
    )


def within_window(tools: list, start: dt.datetime, end: dt.datetime) -> list:
    """The reporter's tools with the report's window as their default `since` / `until`.

    The figures cover [start, end); a look-up the agent makes without a window would otherwise
    cover the tool's own default (the last 24 hours before *now*), and the narrative would
    describe another period than the figures beside it. An explicit argument still wins.
    """
    since, until = start.isoformat(), (end - dt.timedelta(microseconds=1)).isoformat()
    bounded = []
    for tool in tools:
        names = set((tool.parameters or {}).get("properties", {}))
        if not {"since", "until"} <= names:
            bounded.append(tool)
            continue

        async def handler(ctx, _handler=tool.handler, **arguments):
            arguments["since"] = arguments.get("since") or since
            arguments["until"] = arguments.get("until") or until
            return await _handler(ctx, **arguments)

        bounded.append(dataclasses.replace(tool, handler=handler))
    return bounded


def _report_prompt(schedule: Schedule, numbers: dict) -> str:
    start, end = numbers["window"]["start"], numbers["window"]["end"]
    return (
        f"Write the {schedule.get_period_display().lower()} operations report for the period "
        f"from {start} (included) to {end} (excluded), UTC; the schedule's time zone is "
        f"{schedule.timezone}. Write only about this period: when you look incidents or changes "
        f"up, pass since={start} and until={end}. "
        "These figures are exact, from the database; quote them as they are, never recompute or "
        "invent numbers. Durations are in seconds.\n\n```json\n"
        + json.dumps(numbers, indent=1, sort_keys=True)
        + "\n```"
    )


def page_url(path: str) -> str:
    """The address a reader opens a run or report at, from outside (ONGRID_PUBLIC_URL)."""
    return settings.CONFIG.public_url.rstrip("/") + path


def _headline_figures(report: Report) -> list[str]:
    """The report's key figures, one line each, in the active language."""
    f = report.figures
    inc = f.get("incidents", {})
    agents = f.get("agents", {})
    gate = f.get("gate", {})
    cost = (agents.get("cost") or {}).get("usd")
    return [
        "- "
        + gettext("Incidents opened: %(opened)s, resolved: %(resolved)s")
        % {"opened": inc.get("opened", 0), "resolved": inc.get("resolved", 0)},
        "- "
        + gettext("MTTA: %(mtta)s, MTTR: %(mttr)s")
        % {
            "mtta": figures.duration(inc.get("mtta_seconds")),
            "mttr": figures.duration(inc.get("mttr_seconds")),
        },
        "- "
        + gettext("Changes: %(changes)s; gated writes approved: %(approved)s, rejected: %(rejected)s")
        % {
            "changes": f.get("changes", {}).get("total", 0),
            "approved": gate.get("approved", 0),
            "rejected": gate.get("rejected", 0),
        },
        "- "
        + gettext("Agent sessions: %(sessions)s, tool calls: %(calls)s, tokens: %(tokens)s, cost: %(cost)s")
        % {
            "sessions": agents.get("sessions", 0),
            "calls": agents.get("tool_calls", 0),
            "tokens": agents.get("tokens", 0),
            "cost": f"${cost:.4f}" if cost is not None else gettext("unknown"),
        },
    ]


def report_brief(report: Report, narrative_chars: int = 1500) -> str:
    """A chat-sized report: the headline figures and the start of the narrative; the link has the rest."""
    lines = _headline_figures(report)
    if report.narrative:
        narrative = report.narrative.strip()
        if len(narrative) > narrative_chars:
            narrative = narrative[:narrative_chars].rstrip() + " …"
        lines += ["", narrative]
    return "\n".join(lines)


def report_text(report: Report) -> str:
    """The plain-text (Markdown) form of a report: e-mail body and the Markdown export."""
    f = report.figures
    lines = [f"# {report}", "", *_headline_figures(report)]
    for title, key, unit in (
        (gettext("Noisiest alert rules"), "noisiest_alert_rules", "alerts"),
        (gettext("Top services"), "top_services", "incidents"),
        (gettext("Top devices"), "top_devices", "incidents"),
    ):
        if f.get(key):
            lines += ["", f"## {title}"] + [f"- {row['name']}: {row[unit]}" for row in f[key]]
    if report.narrative:
        lines += ["", "## " + gettext("Narrative"), "", report.narrative]
    return "\n".join(lines)
