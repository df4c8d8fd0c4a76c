"""Every write to a `MutatingProposal` goes through these functions (docs/review-gate.md).

A proposal moves one way only: pending → approve | reject, and every transition is a
conditional UPDATE on `decision = pending`, so a human's click, the gate's timeout and a second
click racing each other (possibly in different processes) settle on exactly one outcome.
"""

from __future__ import annotations

import asyncio
import time

from asgiref.sync import sync_to_async
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from agents_app.models import MutatingProposal
from audit_app.redaction import redact_text
from chat_app.models import ChatSession
from ops_app.core.async_db import db_twin
from ops_app.core.text import cut_at_word
from ops_app.tenancy import roles
from ops_app.tenancy.scoping import organization_of

Decision = MutatingProposal.Decision
POLL_SECONDS = 0.25
ERROR_CHARS = 2000  # of a failed run's error kept on the proposal (the audit row has it whole)
STATUS_ERROR_CHARS = 160  # of that error on the card's status line ("Approved · failed: …")


class ProposalClosed(Exception):
    """The proposal was already decided (or never needed a human), so this decision cannot apply."""


def create_proposal(
    *,
    session_id: int,
    tool_call_id: str,
    tool: str,
    tool_class: str,
    persona: str,
    permission_mode: str,
    arguments: dict,
    payload: dict,
) -> MutatingProposal:
    """Store the held call before anyone reviews it, under the session's organization and chat."""
    session = ChatSession.objects.only("pk", "organization_id", "root_session_id").get(pk=session_id)
    return MutatingProposal.objects.create(
        organization_id=session.organization_id,
        session_id=session.pk,
        root_session_id=session.root_session_id or session.pk,
        tool_call_id=tool_call_id[:200],
        tool=tool[:200],
        tool_class=tool_class,
        persona=persona[:100],
        permission_mode=permission_mode,
        arguments=arguments,
        payload=payload,
        target=str(payload.get("target", ""))[:300],
        requires_human=permission_mode == "dual-sign-required",
    )


def attach_reviewer(proposal_id: int, reviewer_session_id: int) -> None:
    MutatingProposal.objects.filter(pk=proposal_id).update(reviewer_session_id=reviewer_session_id)


def record_review(proposal_id: int, approved: bool, reason: str) -> MutatingProposal:
    """The reviewer's verdict. A rejection is final; an approval is final unless a human must sign."""
    with transaction.atomic():
        proposal = MutatingProposal.objects.select_for_update().get(pk=proposal_id)
        if proposal.decision != Decision.PENDING:
            return proposal
        proposal.reviewer_decision = Decision.APPROVE if approved else Decision.REJECT
        proposal.reviewer_reason = reason
        fields = ["reviewer_decision", "reviewer_reason"]
        if not approved or not proposal.requires_human:
            proposal.decision = proposal.reviewer_decision
            proposal.decision_reason = reason
            proposal.decided_at = timezone.now()
            fields += ["decision", "decision_reason", "decided_at"]
        proposal.save(update_fields=fields)
        return proposal


def reject(proposal_id: int, reason: str) -> bool:
    """Reject a still-pending proposal (timeouts, spawn failures, stops). False if it was decided."""
    return bool(
        MutatingProposal.objects.filter(pk=proposal_id, decision=Decision.PENDING).update(
            decision=Decision.REJECT, decision_reason=reason, decided_at=timezone.now()
        )
    )


def may_sign(user: AbstractBaseUser, proposal: MutatingProposal) -> bool:
    """The human half of dual sign: the chat's owner, or an org admin of the proposal's organization."""
    if user is None or not user.is_authenticated:
        return False
    if proposal.root_session.user_id == user.pk:
        return True
    organization = organization_of(user)
    return (
        organization is not None
        and organization.pk == proposal.organization_id
        and user.groups.filter(name=roles.ORG_ADMIN).exists()
    )


def sign(
    proposal: MutatingProposal, user: AbstractBaseUser, approve: bool, reason: str = ""
) -> MutatingProposal:
    """A human approves or rejects a proposal that the reviewer approved and that awaits them.

    The caller has checked `may_sign`. Raises ProposalClosed when the proposal is not waiting
    for a human (already decided, timed out, still with the reviewer, or single-sign).
    """
    now = timezone.now()
    verdict = Decision.APPROVE if approve else Decision.REJECT
    name = user.get_username()
    reason = reason.strip()[:1000] or (f"approved by {name}" if approve else f"rejected by {name}")
    updated = MutatingProposal.objects.filter(
        pk=proposal.pk,
        requires_human=True,
        reviewer_decision=Decision.APPROVE,
        decision=Decision.PENDING,
    ).update(
        human_decision=verdict,
        human_approver=user,
        human_decided_at=now,
        decision=verdict,
        decision_reason=reason,
        decided_at=now,
    )
    proposal.refresh_from_db()
    if not updated:
        raise ProposalClosed(_why_closed(proposal))
    return proposal


def _why_closed(proposal: MutatingProposal) -> str:
    if not proposal.requires_human:
        return "This change does not need a human signature."
    if proposal.decision != Decision.PENDING:
        return f"This change was already decided: {proposal.get_decision_display().lower()}."
    return "The reviewer has not approved this change yet."


def mark_executed(proposal_id: int, status: str, error: str = "") -> bool:
    """Stamp the single run of an approved proposal with what really happened: `executed_at` only
    when it succeeded (`status` ok), else `failed_at` and the error, masked, then cut at a word
    (the audit row keeps it whole). False if it was already stamped."""
    now = timezone.now()
    if status == "ok":
        stamp = {"executed_at": now}
    else:
        stamp = {"failed_at": now, "execution_error": cut_at_word(redact_text(error or status), ERROR_CHARS)}
    return bool(
        MutatingProposal.objects.filter(
            pk=proposal_id, decision=Decision.APPROVE, executed_at__isnull=True, failed_at__isnull=True
        ).update(execution_status=status[:20], **stamp)
    )


async def wait_for_human(
    proposal_id: int, within: float, stopped=None, poll: float = POLL_SECONDS
) -> MutatingProposal:
    """Poll the row until a human decides, `stopped()` says the agent was stopped, or time runs out.

    Polling the database (not an in-process event) is what makes a click served by another
    process count. Each look borrows a connection for one query and gives it back (`db_twin`), so
    a wait of minutes holds none in between: many writes waiting for signatures cannot starve the
    pool the signing requests need. On timeout or stop the proposal is rejected here, unless a
    human got there first.
    """
    deadline = time.monotonic() + within
    while True:
        proposal = await _aproposal(proposal_id)
        if proposal.decision != Decision.PENDING:
            return proposal
        reason = ""
        if stopped is not None and await stopped():
            reason = "the agent was stopped while waiting for a human approval"
        elif time.monotonic() >= deadline:
            reason = f"no human approved it within {within:g}s"
        if reason:
            await areject(proposal_id, reason)
            return await _aproposal(proposal_id)
        await asyncio.sleep(poll)


def _proposal(proposal_id: int) -> MutatingProposal:
    return MutatingProposal.objects.get(pk=proposal_id)


_aproposal = db_twin(_proposal)


def describe_proposal(proposal: MutatingProposal) -> dict:
    """The one shape of a proposal, for every surface: the chat's approval card, the session tree of
    the chat API and the audit pages, and the export. Links are ids plus a readable label."""
    payload = proposal.payload or {}
    approver = proposal.human_approver if proposal.human_approver_id else None
    return {
        "id": proposal.pk,
        "session": proposal.session_id,
        "tool_call_id": proposal.tool_call_id,
        "tool": proposal.tool,
        "tool_class": proposal.tool_class,
        "persona": proposal.persona,
        "permission_mode": proposal.permission_mode,
        "action": payload.get("action", proposal.tool),
        "target": payload.get("target", proposal.target),
        "reason": payload.get("reason", ""),
        "blast_radius": payload.get("blast_radius", ""),
        "operator": payload.get("operator", ""),
        "context_summary": payload.get("context_summary", ""),
        # The tool's server-side rehearsal (docs/review-gate.md "Dry run"): {ok, summary, diff, ...},
        # or None for a tool without one.
        "dry_run": payload.get("dry_run"),
        "arguments": proposal.arguments,
        "reviewer_session": proposal.reviewer_session_id,
        "reviewer_label": f"reviewer #{proposal.reviewer_session_id}" if proposal.reviewer_session_id else "",
        "reviewer_decision": proposal.reviewer_decision,
        "reviewer_reason": proposal.reviewer_reason,
        "requires_human": proposal.requires_human,
        "awaiting_human": proposal.awaiting_human,
        "human_approver": approver.get_username() if approver else None,
        "human_decided_at": proposal.human_decided_at,
        "decision": proposal.decision,
        "decision_reason": proposal.decision_reason,
        "created_at": proposal.created_at,
        "decided_at": proposal.decided_at,
        "outcome": proposal.outcome,
        "executed_at": proposal.executed_at,
        "failed_at": proposal.failed_at,
        "execution_status": proposal.execution_status,
        "execution_error": proposal.execution_error,
        "executed": proposal.executed_at is not None,  # ran and succeeded
        "failed": proposal.failed_at is not None,  # ran and failed: see execution_error
        # The reason on one line of a card's status ("Approved · failed: <reason>"); the card
        # shows the whole stored error below it only when this one is cut.
        "failure_reason": cut_at_word(" ".join(proposal.execution_error.split()), STATUS_ERROR_CHARS),
    }


acreate_proposal = sync_to_async(create_proposal)
aattach_reviewer = sync_to_async(attach_reviewer)
arecord_review = sync_to_async(record_review)
areject = sync_to_async(reject)
amark_executed = sync_to_async(mark_executed)
