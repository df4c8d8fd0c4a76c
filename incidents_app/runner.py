"""Running one investigation: the investigator persona as the root agent of an `investigation`
session, with `submit_report` added to its read-only toolbag (docs/investigations.md).

The report is the run's product: a valid `submit_report` call ends the investigation `done`; an
invalid one is answered with the validation problems (at most `MAX_REPORT_ATTEMPTS` tries); a run
that ends without one is `inconclusive`, keeping the agent's last words as partial findings.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import logging
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings

from agents_app.api import SUBMIT_REPORT, Tool, ToolContext, ToolError, events, get_runtime, run_in_background
from incidents_app import investigations, notify, seen_before
from incidents_app.alerting import triggers as alert_triggers
from incidents_app.changes import for_brief, what_changed
from incidents_app.models import Investigation
from incidents_app.report import REPORT_SCHEMA, check_report
from ops_app.models import DataSource, Incident

log = logging.getLogger(__name__)
MAX_REPORT_ATTEMPTS = 3
# The Alertmanager labels that name a Kubernetes workload (kube-state-metrics, kube-prometheus).
KUBERNETES_LABELS = ("cluster", "namespace", "deployment", "pod")
Status = Investigation.Status
SEEN_BEFORE_HINT = (
    "`seen_before` lists similar past incidents with their root causes: check whether the same cause "
    "is back before looking elsewhere, and say so in your report.\n"
)


def incident_group(incident_id: int) -> str:
    """The channel-layer group an incident page listens on."""
    return f"incident.{incident_id}"


@dataclass
class ReportBox:
    incident: Incident
    session_id: int
    attempts: int = 0
    report: dict = field(default_factory=dict)


def submit_report_tool(box: ReportBox) -> Tool:
    async def handler(ctx: ToolContext, **report) -> dict:
        if box.report:
            return {"status": "already accepted", "hint": "Your report is stored; answer with one line."}
        if box.attempts >= MAX_REPORT_ATTEMPTS:
            raise ToolError("No attempts left: stop and answer with your findings in plain text.")
        box.attempts += 1
        checked = await sync_to_async(check_report)(report, box.incident, box.session_id)
        if not checked.ok:
            left = MAX_REPORT_ATTEMPTS - box.attempts
            raise ToolError(
                "The report does not validate; fix these and call submit_report again "
                f"({left} attempt(s) left):\n- " + "\n- ".join(checked.problems)
            )
        box.report = checked.report
        return {"status": "accepted", "hint": "Report stored. Answer with one line; do not call more tools."}

    return Tool.from_spec(SUBMIT_REPORT, handler, parameters=REPORT_SCHEMA)


def brief(incident: Incident) -> str:
    """The investigation's first message: the incident as the alert pipeline knows it."""
    alerts = [
        {
            "name": a.name,
            "status": a.status,
            "severity": a.severity,
            "labels": a.labels,
            "starts_at": str(a.starts_at),
        }
        for a in incident.alerts.order_by("starts_at")[:20]
    ]
    facts = {
        "incident_id": incident.pk,
        "title": incident.title,
        "severity": incident.severity,
        "status": incident.status,
        "started_at": str(incident.started_at),
        "affected_services": incident.affected_services,
        "device": incident.device.name if incident.device_id else None,
        "alerts": alerts,
        "what_changed": for_brief(what_changed(incident)),
    }
    seen = seen_before.for_brief(incident)
    if seen:
        facts["seen_before"] = seen
    return (
        f"Investigate incident #{incident.pk}: {incident.title}. Find patient zero and the causal chain.\n"
        "Start with get_incident_detail, gather evidence with your tools, then call submit_report "
        "exactly once; each evidence item names the id of the tool call that produced it.\n"
        "`what_changed` lists the estate's changes from two hours before the start: one made shortly "
        "before it on the incident's own services or their neighbours is the usual suspect. Check it "
        "against the metrics and name it as the cause, or rule it out, in your report.\n"
        + kubernetes_hint(incident, alerts)
        + (SEEN_BEFORE_HINT if seen else "")
        + "\n"
        + json.dumps(facts, default=str, indent=1)
    )


def kubernetes_hint(incident: Incident, alerts: list[dict]) -> str:
    """When the alerts name Kubernetes objects and the organization has a cluster, the brief says
    so and points at the k8s tools with those values: the cluster's own state is the evidence."""
    named: dict[str, list[str]] = {}
    for alert in alerts:
        for key in KUBERNETES_LABELS:
            value = str((alert["labels"] or {}).get(key) or "")
            if value and value not in named.setdefault(key, []):
                named[key].append(value)
    named = {key: values for key, values in named.items() if values}
    if not named.keys() - {"cluster"}:
        return ""
    clusters = set(
        DataSource.objects.for_organization(incident.organization_id)
        .filter(kind=DataSource.Kind.KUBERNETES)
        .values_list("name", flat=True)
    )
    if not clusters:
        return ""
    labelled = named.pop("cluster", [])
    words = _kubernetes_words(named, [c for c in labelled if c in clusters])
    if labelled and not set(labelled) & clusters:
        words += (
            f"(The alerts' cluster label {', '.join(labelled)} is none of this organization's clusters: "
            f"{', '.join(sorted(clusters))}; the tools use the default one unless you name another.)\n"
        )
    return words


def _kubernetes_words(named: dict[str, list[str]], clusters: list[str]) -> str:
    where = "; ".join(f"{key} {', '.join(values)}" for key, values in named.items())
    on = f'cluster="{clusters[0]}", ' if clusters else ""
    namespace = (named.get("namespace") or ["<namespace>"])[0]
    calls = [f'k8s_get({on}kind="pods", namespace="{namespace}")']
    if named.get("pod"):
        pod = named["pod"][0]
        calls.append(f'k8s_describe({on}kind="pod", name="{pod}", namespace="{namespace}")')
        calls.append(f'k8s_logs({on}pod="{pod}", namespace="{namespace}", previous=true)')
    if named.get("deployment"):
        deployment = named["deployment"][0]
        calls.append(f'k8s_rollout_history({on}deployment="{deployment}", namespace="{namespace}")')
    calls.append(f'k8s_events({on}namespace="{namespace}")')
    cluster_words = f" on cluster {clusters[0]}" if clusters else ""
    return (
        f"The alerts name Kubernetes objects{cluster_words} ({where}): read the cluster's own state "
        "with the k8s tools before concluding, e.g. " + ", ".join(calls) + ".\n"
    )


async def publish(incident_id: int, event: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(incident_group(incident_id), {"type": "incident.event", "event": event})
    except Exception:  # noqa: BLE001 - a broken layer must not fail the investigation
        log.exception("could not publish investigation event")


async def run_investigation(investigation_id: int) -> Investigation | None:
    """Run a claimed (running) investigation to a terminal state, then start the next queued one."""
    investigation = await Investigation.objects.select_related("incident").aget(pk=investigation_id)
    if investigation.status != Status.RUNNING:
        return None
    incident = investigation.incident
    finished = None
    try:
        finished = await _run(investigation, incident)
    except Exception as exc:  # noqa: BLE001 - the investigation must end whatever happened
        log.exception("investigation %s crashed", investigation_id)
        finished = await sync_to_async(investigations.finish)(
            investigation_id, Status.FAILED, error=f"{type(exc).__name__}: {exc}"
        )
    finally:
        if finished is not None:
            await publish(
                incident.pk,
                {
                    "event": "investigation.ended",
                    "investigation": investigation_id,
                    "status": finished.status,
                },
            )
            await sync_to_async(notify.investigation_ended)(finished)
        await sync_to_async(start_queued)(investigation.organization_id)
    return finished


async def _run(investigation: Investigation, incident: Incident) -> Investigation | None:
    text = await sync_to_async(brief)(incident)
    session = await sync_to_async(investigations.open_session)(investigation.pk, text)
    await publish(
        incident.pk,
        {"event": "investigation.started", "investigation": investigation.pk, "session": session.pk},
    )

    findings = FirstFindings(investigation.pk)

    async def forward(event: events.RuntimeEvent) -> None:
        if isinstance(event, events.ToolStarted | events.ToolEnded):
            await publish(incident.pk, {**event.to_message(), "investigation": investigation.pk})
        await findings.consider(event)

    box = ReportBox(incident, session.pk)
    result = await get_runtime().run_turn(
        session.pk, listeners=[forward], extra_tools=[submit_report_tool(box)]
    )
    usage = result.usage if result is not None else {}
    tokens = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
    partial = (result.text if result is not None else "") or ""
    error = (result.error if result is not None else "") or ""
    stop_reason = (
        await Investigation.objects.filter(pk=investigation.pk).values_list("stop_reason", flat=True).aget()
    )
    if (result is not None and result.status == "killed") or (stop_reason and not box.report):
        status, error = Status.STOPPED, error or "Stopped."
    elif box.report:
        status = Status.DONE
    elif result is None or result.status == "failed":
        status, error = Status.FAILED, error or "The investigation failed."
    else:
        status = Status.INCONCLUSIVE
        error = error or "The investigator ended without a valid report."
    return await sync_to_async(investigations.finish)(
        investigation.pk, status, report=box.report, partial=partial, error=error, tokens=tokens
    )


@dataclass
class FirstFindings:
    """The first evidence a run gathers (a note to the user, or a tool's answer) is kept as its
    partial findings while it runs and redraws the incident's alert cards: once per run, so
    every later event costs nothing (docs/alerts.md)."""

    investigation_id: int
    done: bool = False

    async def consider(self, event: events.RuntimeEvent) -> None:
        if self.done:
            return
        text = ""
        if isinstance(event, events.Note):
            text = event.text
        elif (
            isinstance(event, events.ToolEnded) and event.status == "ok" and event.tool != SUBMIT_REPORT.name
        ):
            text = f"{event.tool}: {event.content}"
        if not text.strip():
            return
        self.done = True
        try:
            await sync_to_async(alert_triggers.findings_found)(self.investigation_id, text)
        except Exception:  # noqa: BLE001 - a card redraw must never fail the investigation
            log.exception("investigation %s: could not record its first findings", self.investigation_id)


def launch(investigation_id: int) -> asyncio.Future | concurrent.futures.Future | None:
    """Run a claimed investigation where turns run: a Celery worker, or this process's loop."""
    if settings.ONGRID_EXECUTOR == "celery":
        # Imported here: the task module imports this one to run the investigation.
        from incidents_app.tasks import run_investigation_task

        run_investigation_task.delay(investigation_id)
        return None
    return run_in_background(run_investigation(investigation_id))


def start_queued(organization_id: int) -> list[int]:
    """Claim what the organization's cap allows and launch it once the claim is committed."""
    ids = investigations.claim_queued(organization_id)
    for pk in ids:
        launch(pk)
    return ids
