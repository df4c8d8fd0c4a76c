"""The review gate (docs/review-gate.md): no write or destructive call runs because one LLM said so.

A policy of the runtime: `AgentsAppConfig.ready()` installs `ReviewGate(get_runtime())` into the
tool chain (`agents_app.tools.invoke.set_review_gate`), so every process that serves chats
(daphne, Celery workers, management commands) has it, and the gate spawns the reviewer through
the runtime it was given rather than by importing the runtime. For a mutating call it:

1. checks the calling persona: `read-only` personas (and the reviewer itself) are refused outright,
   and so is a tool that is not in the persona's toolbag;
2. asks the tool for its dry run when it has one (`preview_<tool>`): what the system says the
   call would change; a dry run the system refuses rejects the call without a reviewer;
3. stores a `MutatingProposal` {action, target, reason, blast_radius, operator, context_summary,
   dry_run};
4. runs the `reviewer` worker synchronously under its own timeout (`ONGRID_REVIEW_TIMEOUT`,
   independent of the tool's), with read tools only; only the first non-empty line of its final
   answer counts, and it must be exactly `Decision: approve` or `Decision: reject`;
5. for `dual-sign-required` personas, waits (`ONGRID_APPROVAL_TIMEOUT`) for the chat's owner or an
   org admin to approve the card in the chat page or by API;
6. approves, and once the tool has run stamps what happened: `executed_at` if it succeeded,
   `failed_at` with the error if it did not; anything else rejects with the reason.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Protocol

from asgiref.sync import sync_to_async
from django.conf import settings
from django.utils import timezone

from agents_app.gate import proposals
from agents_app.models import MutatingProposal, RequestedCall
from agents_app.personas.registry import aget_registry
from agents_app.personas.schema import COORDINATOR, REVIEWER
from agents_app.runtime import events
from agents_app.runtime.publishing import Publisher
from agents_app.tools import replay
from agents_app.tools.invoke import GateDecision
from agents_app.tools.toolbag import build_toolbag
from agents_app.toolsets.contract import Tool, ToolContext, ToolError
from agents_app.toolsets.registry import load_builtin_tools
from agents_app.toolsets.tracing import traced_human_wait, traced_review
from audit_app.models import AuditLog
from audit_app.redaction import redact_arguments, redact_text
from chat_app import services
from chat_app.models import ChatMessage, ChatSession, MessageRole, SessionStatus
from ops_app.core.text import cut_at_word

log = logging.getLogger(__name__)

# The verb is case-insensitive; the rest of the line is not, and nothing else may be on it.
DECISION_LINE = re.compile(r"Decision: (?i:(approve|reject))")
RECENT_WINDOW = timedelta(hours=2)
RECENT_LIMIT = 20
SUMMARY_CHARS = 600
DRY_RUN_SUMMARY_CHARS = 600
DRY_RUN_DIFF_CHARS = 6000
EMPTY = (None, "", [])


@dataclass(frozen=True)
class Verdict:
    approved: bool | None  # None: the answer carried no decision line
    reason: str


def parse_verdict(answer: str) -> Verdict:
    """Read the reviewer's final answer. Only its first non-empty line can decide anything."""
    lines = [line.strip() for line in (answer or "").splitlines() if line.strip()]
    if not lines:
        return Verdict(None, "the reviewer gave no answer")
    found = DECISION_LINE.fullmatch(lines[0])
    if found is None:
        return Verdict(None, "the reviewer's answer did not start with a 'Decision: approve|reject' line")
    reason = "\n".join(lines[1:]).strip() or "no reason given"
    return Verdict(found.group(1).lower() == "approve", reason)


class ReviewerSpawner(Protocol):
    """What the gate needs of the runtime: the only way to run a reviewer."""

    async def spawn_reviewer(self, parent, description, prompt, tool_call_id, publisher=None): ...


class ReviewGate:
    """The gate installed into `invoke_tool`: decides whether one mutating call may run."""

    def __init__(self, runtime: ReviewerSpawner) -> None:
        self.runtime = runtime

    async def __call__(self, tool: Tool, ctx: ToolContext, arguments: dict) -> GateDecision:
        refusal, permission_mode = await _check_caller(tool, ctx)
        if refusal:
            return GateDecision(False, refusal)
        try:
            change = describe_change(tool, arguments)
        except ToolError as error:
            return GateDecision(False, str(error))
        session = await ChatSession.objects.filter(
            pk=ctx.session_id, organization_id=ctx.organization_id
        ).afirst()
        if session is None:
            return GateDecision(False, "a change can only be reviewed inside a chat session")
        try:
            dry_run = await preview_change(tool, ctx, arguments)
        except ToolError as error:
            return GateDecision(False, str(error))
        payload = await sync_to_async(_payload)(session, ctx, change, arguments, dry_run)
        proposal = await proposals.acreate_proposal(
            session_id=session.pk,
            tool_call_id=ctx.tool_call_id,
            tool=tool.name,
            tool_class=tool.tool_class,
            persona=ctx.persona_name,
            permission_mode=permission_mode,
            arguments=_redacted(arguments),
            payload=payload,
        )
        publisher = Publisher(proposal.root_session_id)
        if dry_run is not None and not dry_run["ok"]:
            return await _reject_failed_dry_run(proposal, dry_run, publisher)
        try:
            return await self._decide(proposal, session, ctx, publisher)
        except asyncio.CancelledError:
            # The agent was stopped during the review or the wait for a human: the proposal is
            # rejected at once (never left pending), and the card says so.
            await asyncio.shield(_reject_stopped(proposal.pk, ctx.session_id, publisher))
            raise

    async def _decide(self, proposal, session, ctx: ToolContext, publisher) -> GateDecision:
        verdict = await _ask_reviewer(self.runtime, proposal, session, ctx, publisher)
        proposal = await proposals.arecord_review(proposal.pk, bool(verdict.approved), verdict.reason)
        if proposal.decision == MutatingProposal.Decision.REJECT:
            if proposal.requires_human:
                await _publish(publisher, events.ProposalDecided, proposal)
            return GateDecision(False, f"rejected by reviewer: {proposal.decision_reason}")
        if proposal.requires_human:
            proposal = await _wait_for_human(proposal, publisher)
            if proposal.decision != MutatingProposal.Decision.APPROVE:
                return GateDecision(False, f"not approved by a human: {proposal.decision_reason}")
        stamp = partial(_stamp, proposal.pk, publisher)
        return GateDecision(True, proposal.decision_reason, on_executed=stamp)


async def _reject_stopped(proposal_id: int, session_id: int, publisher) -> None:
    reason = await services.astop_requested(session_id) or "stopped"
    if await proposals.areject(proposal_id, f"the agent was {reason} before the change was decided"):
        try:
            proposal = await MutatingProposal.objects.aget(pk=proposal_id)
            if proposal.requires_human:
                await _publish(publisher, events.ProposalDecided, proposal)
        except Exception:  # noqa: BLE001 - the rejection is stored; the card catches up on reload
            log.exception("could not publish the rejection of proposal %s", proposal_id)


async def _check_caller(tool: Tool, ctx: ToolContext) -> tuple[str, str]:
    """(refusal, permission mode). The toolbag already drops these cases; this is the second lock."""
    if ctx.persona_name == REVIEWER:
        return "the reviewer never changes anything", ""
    persona = (await aget_registry(ctx.organization_id)).by_name(ctx.persona_name)
    if persona is None:
        return f"unknown persona {ctx.persona_name!r}", ""
    if persona.permission_mode == "read-only":
        return f"persona {persona.name!r} is read-only and may not call {tool.name}", persona.permission_mode
    # The called tool itself is added: organization tools (MCP) are not built-ins, and the
    # persona's own lists still decide whether it may have it.
    available = {**load_builtin_tools(), tool.name: tool}
    bag = build_toolbag(persona, available, coordinator=persona.name == COORDINATOR)
    if tool.name not in {t.name for t in bag}:
        return f"{tool.name} is not among the tools of persona {persona.name!r}", persona.permission_mode
    return "", persona.permission_mode


def describe_change(tool: Tool, arguments: dict) -> dict:
    """{action, target, blast_radius} of a write call, from the tool's own account of it; raises
    ToolError when the call can never be allowed.

    A write tool without an account is described conservatively (tenant-wide) rather than refused,
    so a tool added later is still reviewed.
    """
    if tool.describe is None:
        return {"action": tool.name, "target": "", "blast_radius": "tenant_wide"}
    return tool.describe(arguments)


async def preview_change(tool: Tool, ctx: ToolContext, arguments: dict) -> dict | None:
    """The tool's dry run of this call (docs/review-gate.md "Dry run"), or None without one.

    ToolError (a call that can never be allowed, found before anything was sent) propagates;
    every other failure, a timeout included, is a failed dry run. Under an evaluation's replay
    the recordings stand in for the system, so there is nothing to rehearse against.
    """
    if tool.preview is None or replay.handler_for(tool.name, ctx) is not None:
        return None
    try:
        async with asyncio.timeout(tool.timeout):
            answer = await tool.preview(ctx, arguments)
    except ToolError:
        raise
    except TimeoutError:
        answer = {"ok": False, "summary": f"the dry run did not answer within {tool.timeout:g}s"}
    except Exception as error:  # noqa: BLE001 - a dry run that breaks never lets the call through
        log.exception("the dry run of %s failed", tool.name)
        answer = {"ok": False, "summary": f"the dry run could not be run ({type(error).__name__})"}
    return _dry_run_record(answer)


def _dry_run_record(answer: dict) -> dict:
    """The dry run as the proposal keeps it: `ok` a real boolean, its texts masked and cut."""
    record = {key: value for key, value in answer.items() if key not in ("ok", "summary", "diff")}
    record["ok"] = answer.get("ok") is True
    record["summary"] = cut_at_word(redact_text(str(answer.get("summary") or "")), DRY_RUN_SUMMARY_CHARS)
    record["diff"] = cut_at_word(redact_text(str(answer.get("diff") or "")), DRY_RUN_DIFF_CHARS)
    return record


async def _reject_failed_dry_run(proposal: MutatingProposal, dry_run: dict, publisher) -> GateDecision:
    """A change the system itself refused in rehearsal is rejected without asking the reviewer."""
    reason = dry_run["summary"] or "the dry run failed"
    await proposals.areject(proposal.pk, reason)
    if proposal.requires_human:
        await _publish(publisher, events.ProposalDecided, await MutatingProposal.objects.aget(pk=proposal.pk))
    return GateDecision(False, reason)


def _redacted(arguments: dict) -> dict:
    """The arguments as stored on the proposal: credential shapes masked, still a JSON object."""
    text = redact_arguments(json.dumps(arguments, ensure_ascii=False))
    try:
        return json.loads(text)
    except ValueError:
        return {"redacted": text}


def _payload(
    session: ChatSession, ctx: ToolContext, change: dict, arguments: dict, dry_run: dict | None = None
) -> dict:
    """The proposal the reviewer judges and the card shows. A dry run may name the target more
    exactly than the arguments can (the default cluster's own name)."""
    user = session.user.get_username() if session.user_id else "nobody"
    payload = {
        "action": change["action"],
        "target": (dry_run or {}).get("target") or change["target"],
        "reason": str(arguments.get("reason", "")).strip() or "(no reason given)",
        "blast_radius": change["blast_radius"],
        "operator": _operator(ctx, user),
        "context_summary": _context_summary(session),
    }
    if dry_run is not None:
        payload["dry_run"] = dry_run
    return payload


def _operator(ctx: ToolContext, user: str) -> str:
    """Who wants the change: the agent, or a person who sent this exact call with one click."""
    if ctx.tool_call_id.startswith(RequestedCall.CALL_ID_PREFIX):
        return f"{user} (one click; run as agent {ctx.persona_name})"
    return f"agent {ctx.persona_name} for {user}"


def _context_summary(session: ChatSession) -> str:
    """What the agent was asked to do: its task for a worker, the user's last question otherwise."""
    text = session.description
    if not text:
        asked = ChatMessage.objects.filter(session=session, role=MessageRole.USER).order_by("-seq").first()
        text = asked.content if asked else ""
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


@traced_review
async def _ask_reviewer(
    runtime: ReviewerSpawner, proposal: MutatingProposal, session: ChatSession, ctx: ToolContext, publisher
) -> Verdict:
    """Spawn the reviewer under its own timeout; every way it can fail is a rejection with a reason."""

    async def attach(event: events.RuntimeEvent) -> None:
        if isinstance(event, events.WorkerStarted) and event.persona == REVIEWER:
            await proposals.aattach_reviewer(proposal.pk, event.session)

    publisher.listeners.append(attach)
    prompt = await sync_to_async(reviewer_prompt)(proposal)
    limit = settings.CONFIG.review_timeout
    started = time.monotonic()
    description = f"Review: {proposal.payload['action']} on {proposal.payload['target'] or '?'}"
    try:
        async with asyncio.timeout(limit):
            outcome = await runtime.spawn_reviewer(
                session, description[:200], prompt, ctx.tool_call_id, publisher
            )
    except TimeoutError:
        return Verdict(False, f"the reviewer did not decide within {limit:g}s")
    except Exception as error:  # noqa: BLE001 - any failure to review is a rejection
        log.exception("could not run the reviewer for proposal %s", proposal.pk)
        return Verdict(False, f"the reviewer could not be run ({type(error).__name__}: {error})")
    finally:
        publisher.listeners.remove(attach)
    if time.monotonic() - started >= limit:
        return Verdict(False, f"the reviewer did not decide within {limit:g}s")
    if outcome.status != SessionStatus.COMPLETED:
        return Verdict(False, f"the reviewer {outcome.status}: {outcome.error or 'no answer'}")
    verdict = parse_verdict(outcome.text)
    if verdict.approved is None:
        return Verdict(False, verdict.reason)
    return verdict


def reviewer_prompt(proposal: MutatingProposal) -> str:
    """The reviewer's brief: the proposal, the exact call, and recent activity on the same target."""
    call = {"tool": proposal.tool, "class": proposal.tool_class, "arguments": proposal.arguments}
    shown = {key: value for key, value in proposal.payload.items() if key != "dry_run"}
    sections = [
        "A mutating tool call is held until you decide. Review it against your three gates.",
        "Proposal:\n```json\n" + json.dumps(shown, indent=2, ensure_ascii=False) + "\n```",
        "Exact call:\n```json\n" + json.dumps(call, indent=2, ensure_ascii=False) + "\n```",
    ]
    if "dry_run" in proposal.payload:
        sections.append(_dry_run_brief(proposal.payload["dry_run"]))
    sections += [
        "Recent activity on the same target (last 2 hours, newest first):\n" + _recent_activity(proposal),
        'Answer with "Decision: approve" or "Decision: reject" as your first line, then your reasons.',
    ]
    return "\n\n".join(sections)


def _dry_run_brief(dry_run: dict) -> str:
    """The server-side dry run in the reviewer's brief: what the system said, and what would change."""
    facts = {k: v for k, v in dry_run.items() if k not in ("ok", "summary", "diff") and v not in EMPTY}
    text = f"Server-side dry run (nothing was changed): {dry_run.get('summary')}"
    if facts:
        text += "\n" + "\n".join(f"- {key}: {value}" for key, value in facts.items())
    diff = dry_run.get("diff") or "(no field would change)"
    return text + "\nWhat would change (field: now → after):\n```\n" + diff + "\n```"


def _recent_activity(proposal: MutatingProposal) -> str:
    """Other proposals on this target and audited calls that mention it: parallel operations show up."""
    since = timezone.now() - RECENT_WINDOW
    lines = []
    others = (
        MutatingProposal.objects.filter(
            organization_id=proposal.organization_id, target=proposal.target, created_at__gte=since
        )
        .exclude(pk=proposal.pk)
        .order_by("-created_at")[:RECENT_LIMIT]
    )
    if proposal.target:
        for other in others:
            done = ""
            if other.executed_at:
                done = f", executed {other.executed_at:%H:%M:%S}"
            elif other.failed_at:
                done = f", failed ({other.execution_status}) {other.failed_at:%H:%M:%S}"
            lines.append(
                f"- {other.created_at:%H:%M:%S} proposal by {other.persona}: {other.payload.get('action')} "
                f"→ {other.decision}{done}"
            )
    mentions = _mentions(proposal.target)
    if mentions:
        calls = (
            AuditLog.objects.filter(
                organization_id=proposal.organization_id, started_at__gte=since, **mentions
            )
            .exclude(tool_call_id=proposal.tool_call_id, session_id=proposal.session_id)
            .order_by("-started_at")[:RECENT_LIMIT]
        )
        for row in calls:
            lines.append(
                f"- {row.started_at:%H:%M:%S} {row.persona} called {row.tool} ({row.tool_class}) "
                f"→ {row.status}: {row.arguments[:200]}"
            )
    return "\n".join(lines) or "none recorded"


def _mentions(target: str) -> dict | None:
    """How an audited call's arguments name this target (a device by name, an incident by id).

    The regex sticks to what SQLite's and PostgreSQL's engines agree on (no `\\b`).
    """
    if target.startswith("incident:"):
        number = target.removeprefix("incident:")
        return {"arguments__regex": rf'"incident_id"\s*:\s*{number}([^0-9]|$)'} if number.isdigit() else None
    if len(target) >= 3 and not target.startswith("{"):  # silences ({matchers}) are matched by proposal
        return {"arguments__icontains": target}
    return None


@traced_human_wait
async def _wait_for_human(proposal: MutatingProposal, publisher) -> MutatingProposal:
    await _publish(publisher, events.ProposalPending, proposal)

    async def stopped() -> bool:
        return await services.astop_requested(proposal.session_id)

    decided = await proposals.wait_for_human(proposal.pk, settings.CONFIG.approval_timeout, stopped)
    await _publish(publisher, events.ProposalDecided, decided)
    return decided


async def _publish(publisher, kind: type[events.RuntimeEvent], proposal: MutatingProposal) -> None:
    card = await sync_to_async(proposals.describe_proposal)(proposal)
    await publisher.publish(kind(proposal.session_id, proposal=card))


async def _stamp(proposal_id: int, publisher, status: str, error: str) -> None:
    """Record how the approved call's run ended; a card on screen (dual sign) is redrawn with it."""
    if not await proposals.amark_executed(proposal_id, status, error):
        return
    proposal = await MutatingProposal.objects.select_related("human_approver").aget(pk=proposal_id)
    if proposal.requires_human:
        await _publish(publisher, events.ProposalExecuted, proposal)
