"""The incident page's one-click changes (Acknowledge, Resolve, a report's proposed change) as the
page shows them: each still goes through the review gate and the audit in a session of kind
`action`, which is not one of the person's chats, and its progress is read back from the gate's
proposal so the page is right after a reload and on every socket redraw (docs/incidents.md,
"Actions")."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django.utils.translation import gettext as _

from agents_app.api import last_answer
from agents_app.models import MutatingProposal
from chat_app.models import SessionStatus
from incidents_app.models import IncidentAction
from ops_app.models import ChangeEvent, Incident

PENDING, APPROVED, DONE, REJECTED, FAILED = "pending", "approved", "done", "rejected", "failed"
OPEN_STATES = (PENDING, APPROVED)
SHOWN = 10  # the newest actions listed on the page


@dataclass(frozen=True)
class Progress:
    """Where one pressed change stands: `state` for the badge, `text` for people, `reason` why it
    was refused or failed, `at` when it ended (None while open)."""

    action: IncidentAction
    state: str
    text: str
    reason: str = ""
    verdict: str = ""
    at: dt.datetime | None = None
    awaiting_person: bool = False  # dual sign: the reviewer approved, a person must sign here

    @property
    def open(self) -> bool:
        return self.state in OPEN_STATES

    @property
    def headline(self) -> str:
        return headline(self)


def record(incident: Incident, user, verb: str, label: str, session) -> IncidentAction:
    return IncidentAction.objects.create(
        organization_id=incident.organization_id,
        incident=incident,
        requested_by=user,
        verb=verb,
        label=label[:500],
        session=session,
    )


def progress_of(action: IncidentAction) -> Progress:
    """The gate's proposal (held in the action's session) decides the state; without one the
    session's own end says whether the call was refused before any review."""
    proposal = (
        MutatingProposal.objects.filter(root_session_id=action.session_id)
        .select_related("human_approver")
        .order_by("-created_at", "-pk")
        .first()
    )
    if proposal is None:
        session = action.session
        answer = last_answer(session.pk)
        if session.status not in (SessionStatus.RUNNING, SessionStatus.PENDING) and answer is not None:
            reason = session.error or answer.content
            return Progress(action, FAILED, _("failed"), reason, "", answer.created_at)
        return Progress(action, PENDING, _("waiting for the reviewer"))
    verdict = verdict_of(proposal)
    if proposal.decision == MutatingProposal.Decision.PENDING:
        if proposal.reviewer_decision:
            return Progress(action, PENDING, _("waiting for a person to approve"), awaiting_person=True)
        return Progress(action, PENDING, _("waiting for the reviewer"))
    if proposal.decision == MutatingProposal.Decision.REJECT:
        reason = proposal.decision_reason
        return Progress(action, REJECTED, _("rejected"), reason, verdict, proposal.decided_at)
    if proposal.executed_at:
        return Progress(action, DONE, _("done"), "", verdict, proposal.executed_at)
    if proposal.failed_at:
        return Progress(action, FAILED, _("failed"), proposal.execution_error, verdict, proposal.failed_at)
    return Progress(action, APPROVED, _("approved, running"), "", verdict)


def verdict_of(proposal: MutatingProposal) -> str:
    """Who let the change through or stopped it, in words for the timeline."""
    if proposal.human_approver_id and proposal.decision == MutatingProposal.Decision.APPROVE:
        return _("approved by the reviewer and %(name)s") % {"name": proposal.human_approver.get_username()}
    if proposal.decision == MutatingProposal.Decision.APPROVE:
        return _("approved by the reviewer")
    if proposal.decision == MutatingProposal.Decision.REJECT:
        return _("rejected by the review gate")
    return ""


def recent_progress(incident: Incident) -> list[Progress]:
    actions = IncidentAction.objects.filter(incident=incident).select_related("requested_by", "session")
    newest = list(actions.order_by("-created_at", "-pk")[:SHOWN])
    return [progress_of(a) for a in reversed(newest)]


def any_open(incident_id: int) -> bool:
    incident = Incident.objects.get(pk=incident_id)
    return any(p.open for p in recent_progress(incident))


def signature(incident_id: int) -> tuple:
    """What changes when an action moves on: the socket redraws the page only then."""
    incident = Incident.objects.get(pk=incident_id)
    return tuple((p.action.pk, p.state) for p in recent_progress(incident))


def headline(progress: Progress) -> str:
    """ "acknowledged by alice", "Restart nginx by alice": the person who pressed it."""
    name = progress.action.requested_by.get_username()
    if progress.action.verb == "acknowledge":
        return _("acknowledged by %(name)s") % {"name": name}
    if progress.action.verb == "resolve":
        return _("resolved by %(name)s") % {"name": name}
    return _("%(change)s by %(name)s") % {"change": progress.action.label, "name": name}


def timeline_entries(incident: Incident, changes: list[ChangeEvent]) -> tuple[list[tuple], set[int]]:
    """The ended actions as timeline entries crediting the person and naming the gate's verdict,
    and the pks of the change events they account for (the tool records the agent that ran it)."""
    entries, covered = [], set()
    for progress in recent_progress(incident):
        if progress.open or progress.at is None:
            continue
        parts = [headline(progress)]
        if progress.state == DONE:
            parts.append(progress.verdict)
        else:
            parts.append(f"{progress.text}: {progress.reason}" if progress.reason else progress.text)
        entries.append((progress.at, " · ".join(p for p in parts if p)))
        if progress.state == DONE:
            for change in changes:
                if (
                    change.pk not in covered
                    and change.actor_id == progress.action.requested_by_id
                    and progress.action.created_at <= change.occurred_at <= progress.at
                ):
                    covered.add(change.pk)
    return entries, covered


def awaiting_proposal(action: IncidentAction) -> MutatingProposal | None:
    """The proposal of a pressed change that waits for a person's signature (dual sign), if any:
    its card is on this page, since the gate's session is no chat of theirs."""
    return (
        MutatingProposal.objects.filter(
            root_session_id=action.session_id, requires_human=True, decision=MutatingProposal.Decision.PENDING
        )
        .select_related("root_session")
        .first()
    )


def credited(incident: Incident, change: ChangeEvent) -> str:
    """Who a change to the incident is credited to: the person who pressed the button that made
    it (the tool records the agent that ran it for them), else the change's own actor."""
    _, covered = timeline_entries(incident, [change])
    if change.pk in covered:
        pressed = IncidentAction.objects.filter(
            incident=incident, requested_by_id=change.actor_id, created_at__lte=change.occurred_at
        ).select_related("requested_by")
        action = pressed.order_by("-created_at").first()
        if action is not None:
            return action.requested_by.get_username()
    return change.actor_name
