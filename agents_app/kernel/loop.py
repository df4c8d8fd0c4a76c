"""The ReAct loop every agent runs: coordinator, specialists, investigator, reviewer.

One `run_agent` call is one turn of one agent: compose the system prompt, then repeat
"call the LLM → run the tool calls of that step concurrently → append the results" until the
model answers without tools, the turn limit or the tool budget is reached, the run is stopped,
or the LLM fails for good. Model misbehaviour (bad JSON, unknown tools, tools that crash or hang)
becomes a tool result the model reads, never an exception out of the loop.

The kernel knows nothing about sessions, websockets, Celery or the audit tables: it talks to the
outside through the event sink, the cancel token and the LLM-call recorder the runtime hands it,
and returns the messages it appended so the runtime can persist them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import accumulate

from agents_app import metrics
from agents_app.kernel.events import Error, EventSink, Final, Retrying, TextDelta, ToolEnd, ToolStart
from agents_app.kernel.prompt import compose_system_prompt, system_reminder
from agents_app.llm.base import LLMCompletion, LLMDelta, LLMError, LLMProvider, LLMRetrying, ToolCall
from agents_app.llm.model_aliases import resolve_model
from agents_app.personas.schema import Persona, Skill
from agents_app.tools.cancel import CancelToken, Stopped
from agents_app.tools.deferral import counts_against_budget, plan_tools
from agents_app.tools.invoke import ToolOutcome, invoke_tool, record_not_run, record_unknown_tool
from agents_app.toolsets.contract import Tool, ToolContext
from agents_app.toolsets.control.manifest import AGENT_TOOL
from audit_app.redaction import redact_arguments

logger = logging.getLogger(__name__)

COMPLETED, FAILED, KILLED, BUDGET_EXHAUSTED = "completed", "failed", "killed", "budget_exhausted"

# Called once per model request with keyword fields (organization_id, session_id, persona,
# provider, model, usage, latency_ms, finish_reason, error, started_at); the runtime passes
# `audit_app.recorder.record_llm_call`.
LLMRecorder = Callable[..., Awaitable[object]]


@dataclass
class AgentResult:
    status: str  # completed | failed | killed | budget_exhausted
    text: str
    usage: dict
    error: str = ""
    new_messages: list[dict] = field(default_factory=list)
    cut_off: str = ""  # for a stopped run: what it was doing when the stop landed


async def run_agent(
    *,
    persona: Persona,
    messages: list[dict],
    tools: list[Tool],
    ctx: ToolContext,
    provider: LLMProvider,
    sink: EventSink,
    cancel: CancelToken,
    base_prompt: str = "",
    skills: Iterable[Skill] = (),
    catalog: str | None = None,
    model: str | None = None,
    recorder: LLMRecorder | None = None,
    language_line: str = "",
    skill_catalog: str | None = None,
) -> AgentResult:
    """Run one agent turn to its end; never raises for LLM or tool misbehaviour."""
    run = _AgentRun(
        persona,
        messages,
        tools,
        ctx,
        provider,
        sink,
        cancel,
        base_prompt,
        skills,
        catalog,
        model,
        skill_catalog,
    )
    run.recorder = recorder
    run.language_line = language_line
    return await run.execute()


class _Stopped(Exception):
    pass


class _AgentRun:
    def __init__(
        self,
        persona,
        messages,
        tools,
        ctx,
        provider,
        sink,
        cancel,
        base_prompt,
        skills,
        catalog,
        model,
        skill_catalog=None,
    ):
        self.persona: Persona = persona
        self.ctx: ToolContext = replace(ctx, persona_name=persona.name)
        self.provider: LLMProvider = provider
        self.sink: EventSink = sink
        self.cancel: CancelToken = cancel
        self.catalog = catalog if persona.is_coordinator else None
        # Resolved again here, where the request is sent: an alias never reaches the endpoint.
        self.model: str = resolve_model(model or persona.model, provider, None)
        self.system = compose_system_prompt(base_prompt, persona, list(skills), self.catalog, skill_catalog)
        plan = plan_tools(persona, tools, sees_every_tool=getattr(provider, "sees_every_tool", False))
        self.tools = plan.callable
        self.shelf = plan.shelf
        self.schemas = [tool.schema() for tool in plan.offered]
        self.sent = {tool.name for tool in plan.offered}
        self.history: list[dict] = list(messages)
        self.new_messages: list[dict] = []
        self.usage = {"prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 0, "tool_calls": 0}
        self.max_turns = max(1, persona.max_turns or 1)
        self.budget = persona.max_tool_calls
        self.recorder: LLMRecorder | None = None
        self.language_line = ""
        self.doing = "starting"

    async def execute(self) -> AgentResult:
        try:
            for _turn in range(self.max_turns):
                completion = await self._llm_step(self.schemas)
                if not completion.tool_calls:
                    return await self._finish(COMPLETED, completion.text)
                await self._tool_step(completion)
                if self._budget_spent():
                    return await self._wrap_up(f"the tool budget of {self.budget} calls is spent")
            return await self._wrap_up(f"the limit of {self.max_turns} turns is reached")
        except _Stopped:
            return await self._stopped()
        except LLMError as error:
            return await self._failed(error.message, error.partial)

    # -- LLM -------------------------------------------------------------------------------------

    def _llm_messages(self, note: str | None = None) -> list[dict]:
        reminder = system_reminder(self.persona, self.catalog, self.language_line)
        tail = [{"role": "system", "content": reminder}]
        if note:
            tail.append({"role": "system", "content": note})
        return [{"role": "system", "content": self.system}, *self.history, *tail]

    async def _llm_step(self, schemas: list[dict], note: str | None = None) -> LLMCompletion:
        if await self.cancel.poll():
            raise _Stopped
        started_at, clock = datetime.now(UTC), time.monotonic()
        self.doing = "waiting for the model's reply"
        try:
            completion = await self.cancel.race(self._consume(self.provider, note, schemas))
        except Stopped:
            await self._record_llm(started_at, clock, None, "stopped")
            raise _Stopped from None
        except LLMError as error:
            await self._record_llm(started_at, clock, None, error.message)
            raise
        except Exception as error:  # a provider bug must end the run cleanly, not crash the runtime
            logger.exception("LLM provider %s crashed", self.provider.name)
            message = f"the LLM provider failed: {type(error).__name__}: {error}"
            await self._record_llm(started_at, clock, None, message)
            raise LLMError(message) from error
        if self.cancel.cancelled:
            await self._record_llm(started_at, clock, completion, "stopped")
            raise _Stopped
        if completion is None:
            await self._record_llm(started_at, clock, None, "stream ended without a completion")
            raise LLMError("the LLM stream ended without a completion")
        await self._record_llm(started_at, clock, completion, "")
        return completion

    async def _consume(
        self, provider: LLMProvider, note: str | None, schemas: list[dict]
    ) -> LLMCompletion | None:
        """Read one streamed reply; runs as its own task so a stop can close the stream mid-wait."""
        completion: LLMCompletion | None = None
        stream = provider.stream_chat(self._llm_messages(note), schemas, model=self.model)
        async with aclosing(stream):
            async for event in stream:
                if isinstance(event, LLMDelta):
                    await self.sink.emit(TextDelta(event.text))
                elif isinstance(event, LLMCompletion):
                    completion = event
                elif isinstance(event, LLMRetrying):
                    await self._retrying(event)
                if self.cancel.cancelled:
                    break
        return completion

    async def _retrying(self, event: LLMRetrying) -> None:
        self.doing = f"waiting to ask the model again (attempt {event.attempt} of {event.attempts})"
        await self.sink.emit(Retrying(event.reason, event.attempt, event.attempts, event.delay, event.status))

    async def _record_llm(self, started_at, clock, completion: LLMCompletion | None, error: str) -> None:
        seconds = time.monotonic() - clock
        usage = completion.usage if completion else {}
        self.usage["llm_calls"] += 1
        self.usage["prompt_tokens"] += usage.get("prompt_tokens", 0)
        self.usage["completion_tokens"] += usage.get("completion_tokens", 0)
        metrics.record_llm(self.model, "error" if error else "ok", seconds, usage)
        if self.recorder is None or not self.ctx.organization_id:
            return
        await self.recorder(
            organization_id=self.ctx.organization_id,
            session_id=self.ctx.session_id,
            persona=self.persona.name,
            provider=self.provider.name,
            model=completion.model if completion and completion.model else self.model,
            usage=usage,
            latency_ms=int(seconds * 1000),
            finish_reason=completion.finish_reason if completion else "",
            error=error,
            started_at=started_at,
        )

    # -- tools -----------------------------------------------------------------------------------

    async def _tool_step(self, completion: LLMCompletion) -> None:
        calls = _unique_ids(completion.tool_calls)
        self._append(
            {
                "role": "assistant",
                "content": completion.text or None,
                "tool_calls": [_wire_call(call) for call in calls],
            }
        )
        self.doing = "running " + ", ".join(_describe_call(call) for call in calls)
        for call in calls:
            await self.sink.emit(ToolStart(call.id, call.name, redact_arguments(call.arguments_raw)))
        remaining = len(calls) if self.budget is None else max(0, self.budget - self.usage["tool_calls"])
        counted = [counts_against_budget(call.name) for call in calls]
        ranks = [0, *accumulate(counted)][:-1]  # counted calls before each one
        outcomes = await asyncio.gather(
            *(
                self._one_call(call, within_budget=not counts or rank < remaining)
                for call, counts, rank in zip(calls, counted, ranks, strict=True)
            )
        )
        self.usage["tool_calls"] += min(sum(counted), remaining)
        for call, outcome in zip(calls, outcomes, strict=True):
            self._append({"role": "tool", "tool_call_id": call.id, "content": outcome.content})
        self._offer_loaded()
        # Only this run's own stop ends it: a tool reporting `killed` (AgentTool after TaskStop of
        # its worker) is news for the model to read, not a reason to stop the coordinator.
        if self.cancel.cancelled:
            raise _Stopped

    async def _one_call(self, call: ToolCall, *, within_budget: bool) -> ToolOutcome:
        ctx = replace(self.ctx, tool_call_id=call.id)
        tool = self.tools.get(call.name)
        if tool is None:
            outcome = await record_unknown_tool(call.name, ctx, call.arguments_raw, self._known_names())
        elif self.shelf is not None and not self.shelf.admit(tool):
            message = (
                f"Not run: {call.name} is a deferred tool and its schema was not loaded. It is loaded now: "
                "read its parameters in your tools and call it again."
            )
            outcome = await record_not_run(
                call.name, ctx, call.arguments_raw, "error", message, tool.tool_class
            )
        elif not within_budget:
            message = f"Not run: the tool budget of {self.budget} calls is spent. Answer with what you have."
            outcome = await record_not_run(
                call.name, ctx, call.arguments_raw, "rejected", message, tool.tool_class
            )
        else:
            outcome = await invoke_tool(tool, ctx, call.arguments_raw, cancel=self.cancel)
        await self.sink.emit(
            ToolEnd(call.id, outcome.name, outcome.status, outcome.display_content, outcome.duration_ms)
        )
        return outcome

    def _offer_loaded(self) -> None:
        """Send, from the next step on, the schemas ToolSearch (or a premature call) loaded."""
        if self.shelf is None:
            return
        for name, tool in self.shelf.loaded.items():
            if name not in self.sent:
                self.sent.add(name)
                self.schemas.append(tool.schema())

    def _known_names(self) -> list[str]:
        """The names an unknown-tool error suggests: what the model can call, stubs aside."""
        return [name for name, tool in self.tools.items() if not (self.shelf and tool.redirect)]

    def _budget_spent(self) -> bool:
        return self.budget is not None and self.usage["tool_calls"] >= self.budget

    # -- endings ---------------------------------------------------------------------------------

    async def _wrap_up(self, why: str) -> AgentResult:
        """Out of turns or tools: one last call without tools for the best partial answer."""
        note = (
            f"Stop now: {why}. Do not call tools. Give your best answer from what you have found so far "
            "and say clearly what is still unverified."
        )
        try:
            completion = await self._llm_step([], note)
            text = completion.text.strip() or self._last_tool_results()
        except LLMError as error:
            logger.warning("wrap-up call failed: %s", error.message)
            text = self._last_tool_results()
        return await self._finish(BUDGET_EXHAUSTED, f"[Partial answer: {why}.]\n\n{text}")

    def _last_tool_results(self) -> str:
        results = [m["content"] for m in self.new_messages if m["role"] == "tool"][-3:]
        return "Latest tool results:\n" + "\n---\n".join(results) if results else "No result was reached."

    async def _finish(self, status: str, text: str) -> AgentResult:
        self._append({"role": "assistant", "content": text})
        await self.sink.emit(Final(text))
        return AgentResult(status, text, dict(self.usage), "", self.new_messages)

    async def _stopped(self) -> AgentResult:
        reason = self.cancel.reason or "stop requested"
        await self.sink.emit(Error(reason))
        return AgentResult(KILLED, "", dict(self.usage), reason, self.new_messages, cut_off=self.doing)

    async def _failed(self, message: str, partial: str = "") -> AgentResult:
        """`partial`: what the model had streamed when its reply broke off. The person saw it, so it
        is kept (persisted as the turn's answer so far) beside the error, not thrown away."""
        if partial.strip():
            self._append({"role": "assistant", "content": partial})
        await self.sink.emit(Error(message))
        return AgentResult(FAILED, partial, dict(self.usage), message, self.new_messages)

    def _append(self, message: dict) -> None:
        self.history.append(message)
        self.new_messages.append(message)


def _unique_ids(calls: list[ToolCall]) -> list[ToolCall]:
    """Some servers repeat or omit call ids; the history needs one distinct id per call."""
    seen: set[str] = set()
    unique = []
    for index, call in enumerate(calls):
        call_id = call.id or f"call_{index}"
        if call_id in seen:
            call_id = f"{call_id}_{index}"
        seen.add(call_id)
        unique.append(replace(call, id=call_id))
    return unique


def _describe_call(call: ToolCall) -> str:
    """`host_du_summary` or, for a dispatch, `AgentTool (specialist-disk: Disk usage on web-01)`."""
    if call.name != AGENT_TOOL.name:
        return call.name
    try:
        arguments = json.loads(call.arguments_raw or "{}")
    except ValueError:
        return call.name
    if not isinstance(arguments, dict):
        return call.name
    who = str(arguments.get("subagent_type") or "?")
    what = " ".join(str(arguments.get("description") or "").split())[:80]
    return f"a {who} worker ({what})" if what else f"a {who} worker"


def _wire_call(call: ToolCall) -> dict:
    """The assistant message's copy of a call. Invalid JSON is replaced by `{}` so strict servers accept
    the history on the next request; the model reads its mistake in the tool result, the audit row
    keeps the original text."""
    arguments = call.arguments_raw
    try:
        json.loads(arguments)
    except ValueError:
        arguments = "{}"
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}
