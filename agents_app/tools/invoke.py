"""The one place a tool call is executed: the decorator chain of docs/kernel.md.

    tenant binding → review gate → timeout → audit → metrics

Every call the LLM makes goes through `invoke_tool` (or `record_unknown_tool` when it named a
tool it does not have), so every call leaves exactly one `audit_logs` row and one metric sample,
whatever happened: bad JSON, a refused write, a hang, a crash, a stop request.

The review gate is a module-level hook. Until the reviewer is plugged in (`set_review_gate`),
the default refuses every `write` / `destructive` call: a missing gate must never mean "allowed".
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import jsonschema
from django.conf import settings

from agents_app import metrics
from agents_app.tools import replay
from agents_app.tools.cancel import Stopped
from agents_app.tools.results import render
from agents_app.toolsets.contract import Tool, ToolContext, ToolError, ToolResult
from agents_app.toolsets.tracing import traced_tool_call
from audit_app import recorder
from audit_app.recorder import truncate
from audit_app.redaction import redact_text

if TYPE_CHECKING:
    from agents_app.tools.cancel import CancelToken

logger = logging.getLogger(__name__)

STOPPED_MID_RUN = "stopped while running; the change may have been partly made"


@dataclass(frozen=True)
class ToolOutcome:
    call_id: str
    name: str
    status: str
    content: str  # what the LLM reads: the result or the error, truncated
    error: str = ""
    duration_ms: int = 0
    result_size: int = 0  # characters before truncation
    audit_id: int | None = None

    @property
    def display_content(self) -> str:
        """The copy for events and screens: credential shapes masked."""
        return redact_text(self.content)


@dataclass(frozen=True)
class GateDecision:
    approved: bool
    reason: str = ""
    # Called once with the audit status and the error after an approved call ran, or was stopped
    # while running (the gate stamps the proposal executed or failed).
    on_executed: Callable[[str, str], Awaitable[None]] | None = field(default=None, compare=False)


ReviewGate = Callable[[Tool, ToolContext, dict], Awaitable[GateDecision]]


async def refuse_all_writes(tool: Tool, ctx: ToolContext, arguments: dict) -> GateDecision:
    """The gate in force until the reviewer is installed: nothing that changes a system runs."""
    return GateDecision(
        False,
        f"`{tool.name}` is a {tool.tool_class} tool and no review gate is installed, so it was not run. "
        "Tell the user the change needs a reviewer and describe what you would have done.",
    )


_review_gate: ReviewGate = refuse_all_writes


def set_review_gate(gate: ReviewGate | None) -> ReviewGate:
    """Install the review gate (None restores the refuse-all default); returns the previous one."""
    global _review_gate
    previous = _review_gate
    _review_gate = gate or refuse_all_writes
    return previous


class _Refusal(Exception):
    def __init__(self, status: str, message: str):
        self.status = status
        self.message = message


@dataclass(frozen=True)
class _Call:
    """One call being accounted for: what the audit row and the metric sample need to know."""

    name: str
    tool_class: str
    ctx: ToolContext
    arguments_raw: str
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    clock: float = field(default_factory=time.monotonic)
    metric_name: str | None = None  # replaces `name` in metrics (hallucinated names)


@traced_tool_call
async def invoke_tool(
    tool: Tool, ctx: ToolContext, arguments_raw: str, *, cancel: CancelToken | None = None
) -> ToolOutcome:
    """Run one tool call through the whole chain and account for it."""
    if not ctx.organization_id:
        return _refuse_unbound(tool.name, ctx)
    current = _Call(tool.name, tool.tool_class, ctx, arguments_raw)
    try:
        if cancel is None:
            status, content, error = await _run(tool, ctx, arguments_raw, cancel)
        else:  # a stop cancels the call itself: its process, channel or wait ends at once
            status, content, error = await cancel.race(_run(tool, ctx, arguments_raw, cancel))
    except Stopped as stop:
        message = f"Stopped while running ({stop.reason}); no result."
        return await _account(current, "killed", message, message)
    except asyncio.CancelledError:
        why = f"Stopped while running ({cancel.reason})." if cancel is not None and cancel.reason else ""
        await asyncio.shield(_account(current, "killed", why, why or "stopped while running"))
        raise
    return await _account(current, status, content, error)


async def record_unknown_tool(
    name: str, ctx: ToolContext, arguments_raw: str, known: list[str]
) -> ToolOutcome:
    """The LLM named a tool it does not have: tell it which ones exist, and audit the attempt."""
    listing = ", ".join(sorted(known)) or "none"
    message = f"Error: there is no tool named {name!r}. Available tools: {listing}."
    return await record_not_run(
        name or "(none)", ctx, arguments_raw, "error", message, metric_name="(unknown)"
    )


async def record_not_run(
    name: str,
    ctx: ToolContext,
    arguments_raw: str,
    status: str,
    message: str,
    tool_class: str = "",
    metric_name: str | None = None,
) -> ToolOutcome:
    """Account for a call the kernel decided not to run (unknown tool, budget spent, agent stopped).

    `metric_name` replaces the tool name in metrics, so hallucinated names cannot grow label sets.
    """
    if not ctx.organization_id:
        return _refuse_unbound(metric_name or name, ctx)
    current = _Call(name, tool_class, ctx, arguments_raw, metric_name=metric_name)
    return await _account(current, status, message, message)


def _refuse_unbound(name: str, ctx: ToolContext) -> ToolOutcome:
    """Tenant binding: no organization, no call — and no audit row, which needs a tenant."""
    logger.warning("refused %s: no organization bound to the call", name)
    metrics.record_tool(name, "rejected", 0.0)
    message = "Refused: this call is not bound to an organization."
    return ToolOutcome(ctx.tool_call_id, name, "rejected", message, error=message)


async def _run(
    tool: Tool, ctx: ToolContext, arguments_raw: str, cancel: CancelToken | None
) -> tuple[str, str, str]:
    """Returns (status, content for the LLM, error text)."""
    try:
        if cancel is not None and await _stop_seen(tool, cancel):
            raise _Refusal("killed", f"Not run: the agent was stopped ({cancel.reason or 'stop requested'}).")
        arguments = parse_arguments(tool, arguments_raw)
        decision = await _review(tool, ctx, arguments) if tool.mutates else None
        if decision is None or decision.on_executed is None:
            return await _execute(tool, ctx, arguments)
        return await _execute_approved(tool, ctx, arguments, decision)
    except _Refusal as refusal:
        return refusal.status, refusal.message, refusal.message


async def _stop_seen(tool: Tool, cancel: CancelToken) -> bool:
    """A write consults the cross-process stop flag; a read trusts the in-process token.

    The runtime's watcher and the channel push already fire the token within a second of a stop,
    and the loop reads the flag before every model call, so a read tool that slips through costs
    nothing; reading the row before every read was a fifth of a turn's queries.
    """
    return await cancel.poll() if tool.mutates else cancel.cancelled


def parse_arguments(tool: Tool, arguments_raw: str) -> dict:
    """Decode and validate the LLM's arguments; every failure is a message the model can fix."""
    try:
        arguments = json.loads(arguments_raw) if arguments_raw.strip() else {}
    except ValueError as error:
        raise _Refusal(
            "error",
            f"Error: the arguments for {tool.name} are not valid JSON ({error.msg} at position {error.pos}). "
            "Call the tool again with a JSON object matching its schema.",
        ) from None
    if not isinstance(arguments, dict):
        raise _Refusal("error", f"Error: the arguments for {tool.name} must be a JSON object.")
    try:
        validator = jsonschema.validators.validator_for(tool.parameters)(tool.parameters)
        problem = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except jsonschema.exceptions.SchemaError:
        logger.exception("tool %s has an invalid parameter schema", tool.name)
        problem = None
    if problem is not None:
        where = "/".join(str(part) for part in problem.absolute_path) or "arguments"
        raise _Refusal("error", f"Error: invalid arguments for {tool.name}: {where}: {problem.message}.")
    return arguments


async def _execute_approved(
    tool: Tool, ctx: ToolContext, arguments: dict, decision: GateDecision
) -> tuple[str, str, str]:
    """Run an approved write and tell the gate how the run ended, so that a failure (or a stop
    mid-run) is never recorded as a change that happened."""
    try:
        status, content, error = await _execute(tool, ctx, arguments)
    except asyncio.CancelledError:
        await asyncio.shield(_after_execution(tool, decision, "killed", STOPPED_MID_RUN))
        raise
    await _after_execution(tool, decision, status, "" if status == "ok" else error or content)
    return status, content, error


async def _after_execution(tool: Tool, decision: GateDecision, status: str, error: str) -> None:
    try:
        await decision.on_executed(status, error)
    except Exception:  # the call ran; failing to record it must not hide its result
        logger.exception("could not record the execution of %s", tool.name)


async def _review(tool: Tool, ctx: ToolContext, arguments: dict) -> GateDecision:
    try:
        decision = await _review_gate(tool, ctx, arguments)
    except Exception as error:  # a broken gate refuses; it never lets the call through
        logger.exception("review gate failed for %s", tool.name)
        raise _Refusal("rejected", f"Rejected: the review gate failed ({error}).") from None
    if not decision.approved:
        raise _Refusal("rejected", f"Rejected by the review gate: {decision.reason or 'no reason given'}")
    return decision


async def _execute(tool: Tool, ctx: ToolContext, arguments: dict) -> tuple[str, str, str]:
    # An evaluation's recordings stand in for the handler of its organization (agents_app/tools/replay.py).
    handler = replay.handler_for(tool.name, ctx) or tool.handler
    try:
        async with asyncio.timeout(tool.timeout):
            value = await handler(ctx, **arguments)
    except TimeoutError:
        message = f"Error: {tool.name} timed out after {tool.timeout:g}s."
        return "timeout", message, message
    except ToolError as error:
        return "error", f"Error: {error}", str(error)
    except Exception as error:
        _log_crash(tool.name, error)
        message = f"Error: {tool.name} failed with an internal error ({type(error).__name__}: {error})."
        return "error", message, message
    limit = settings.CONFIG.tool_result_limit
    if isinstance(value, ToolResult):
        return value.status, render(value.content, limit), ""
    return "ok", render(value, limit), ""


def _log_crash(name: str, error: Exception) -> None:
    """Log a tool bug with its traceback, minus any credential its message may carry."""
    trace = "".join(traceback.format_tb(error.__traceback__))
    logger.error("tool %s crashed: %s\n%s", name, redact_text(f"{type(error).__name__}: {error}"), trace)


async def _account(current: _Call, status: str, content: str, error: str) -> ToolOutcome:
    """Audit row + metrics; a failing audit write is logged, never hidden from the caller's result."""
    seconds = time.monotonic() - current.clock
    duration_ms = int(seconds * 1000)
    shown = truncate(content)
    metrics.record_tool(current.metric_name or current.name, status, seconds)
    ctx = current.ctx
    audit_id = await recorder.record_tool_call(
        organization_id=ctx.organization_id,
        session_id=ctx.session_id,
        user_id=ctx.user_id,
        persona=ctx.persona_name,
        tool_call_id=ctx.tool_call_id,
        tool=current.name,
        tool_class=current.tool_class,
        arguments_raw=current.arguments_raw,
        content=content,
        status=status,
        error=error,
        started_at=current.started_at,
        duration_ms=duration_ms,
    )
    return ToolOutcome(
        ctx.tool_call_id, current.name, status, shown, error, duration_ms, len(content), audit_id
    )
