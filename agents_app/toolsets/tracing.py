"""The agents' spans: a turn, each agent run (workers and the reviewer), each model call, each tool
call, the review gate's review and the wait for a human (docs/observability.md, "Traces").

Every layer of the agents app hooks in here with one decorator (or, for providers, one wrapper),
so the span names and attributes live in one module and the runtime, kernel, tool chain and gate
keep no tracing code. Names and attributes follow the OpenTelemetry GenAI semantic conventions
where they exist (`gen_ai.*`), and Ongrid's own otherwise (`ongrid.*`).

Nothing a user or a model wrote is put on a span (messages, prompts, tool arguments and results)
unless ONGRID_OTEL_CAPTURE_CONTENT is on, and even then secrets are masked the way audit rows mask
them. Identifiers (session, organization, tool, device, cluster, data source names) always are.
While tracing is off each decorator costs one boolean test.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

from audit_app.redaction import redact_arguments, redact_text
from chat_app.models import ChatSession
from ops_app.core import tracing

F = TypeVar("F", bound=Callable[..., Awaitable[Any]])

# The arguments that name the system a tool call reached; their values are identifiers.
BACKEND_ARGUMENTS = ("datasource", "cluster", "namespace", "device", "host")
CONTENT_LIMIT = 8000


def _capped(text: str) -> str:
    return text if len(text) <= CONTENT_LIMIT else f"{text[:CONTENT_LIMIT]}…[{len(text)} characters]"


# ---- the turn and the agents under it --------------------------------------------------------


def traced_turn(run_turn: F) -> F:
    """`Runtime.run_turn(session_id, …)` as the root span of the turn's agents (a child of the
    request or Celery task that started it, when they are traced)."""

    @functools.wraps(run_turn)
    async def traced(self, session_id: int, *args, **kwargs):
        if not tracing.enabled():
            return await run_turn(self, session_id, *args, **kwargs)
        attributes = await _session_attributes(session_id)
        with tracing.span("ongrid.turn", attributes) as span:
            result = await run_turn(self, session_id, *args, **kwargs)
            status = result.status if result is not None else "failed"
            span.set_attribute("ongrid.turn.status", status)
            if status == "failed":
                span.set_error("turn_failed")
            return result

    return traced  # type: ignore[return-value]


async def _session_attributes(session_id: int) -> dict:
    row = await (
        ChatSession.objects.filter(pk=session_id)
        .values("organization_id", "organization__slug", "agent_id", "kind", "channel", "root_session_id")
        .afirst()
    )
    if row is None:
        return {"ongrid.session.id": session_id}
    return {
        "ongrid.session.id": session_id,
        "gen_ai.conversation.id": str(row["root_session_id"] or session_id),
        "ongrid.organization.id": row["organization_id"],
        "ongrid.organization.slug": row["organization__slug"],
        "gen_ai.agent.name": row["agent_id"],
        "ongrid.session.kind": row["kind"],
        "ongrid.session.channel": row["channel"],
    }


def traced_worker(run_worker: F) -> F:
    """`Runtime._run_worker(parent, persona, description, prompt, publisher, tool_call_id, …)`:
    one `invoke_agent` span per worker (and reviewer), under the call that spawned it."""

    @functools.wraps(run_worker)
    async def traced(self, parent, persona, description, prompt, *args, **kwargs):
        if not tracing.enabled():
            return await run_worker(self, parent, persona, description, prompt, *args, **kwargs)
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": persona.name,
            "ongrid.parent_session.id": parent.pk,
            "gen_ai.conversation.id": str(parent.root_session_id or parent.pk),
            "ongrid.organization.id": parent.organization_id,
            "ongrid.permission_mode": persona.permission_mode,
        }
        if tracing.capture_content():
            attributes["ongrid.agent.prompt"] = _capped(redact_text(prompt))
        with tracing.span(f"invoke_agent {persona.name}", attributes) as span:
            outcome = await run_worker(self, parent, persona, description, prompt, *args, **kwargs)
            span.set_attributes(
                {"ongrid.session.id": outcome.session_id, "ongrid.agent.status": outcome.status}
            )
            if outcome.status == "failed":
                span.set_error("agent_failed")
            if tracing.capture_content():
                span.set_attribute("ongrid.agent.result", _capped(redact_text(outcome.text)))
            return outcome

    return traced  # type: ignore[return-value]


def traced_detached(run_detached: F) -> F:
    """`Runtime.run_detached(session, persona, …)`: a scheduled run's agent, the root of its trace."""

    @functools.wraps(run_detached)
    async def traced(self, session, persona, *args, **kwargs):
        if not tracing.enabled():
            return await run_detached(self, session, persona, *args, **kwargs)
        attributes = {
            **await _session_attributes(session.pk),
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": persona.name,
        }
        with tracing.span(f"invoke_agent {persona.name}", attributes) as span:
            outcome = await run_detached(self, session, persona, *args, **kwargs)
            span.set_attribute("ongrid.agent.status", outcome.status)
            if outcome.status == "failed":
                span.set_error("agent_failed")
            return outcome

    return traced  # type: ignore[return-value]


# ---- tool calls --------------------------------------------------------------------------------


def traced_tool_call(invoke_tool: F) -> F:
    """`invoke_tool(tool, ctx, arguments_raw, …)`: one `execute_tool` span per call; the audit row
    written inside it keeps the trace id."""

    @functools.wraps(invoke_tool)
    async def traced(tool, ctx, arguments_raw: str, *args, **kwargs):
        if not tracing.enabled():
            return await invoke_tool(tool, ctx, arguments_raw, *args, **kwargs)
        with tracing.span(f"execute_tool {tool.name}", tool_attributes(tool, ctx, arguments_raw)) as span:
            outcome = await invoke_tool(tool, ctx, arguments_raw, *args, **kwargs)
            span.set_attribute("ongrid.tool.status", outcome.status)
            if outcome.status in ("error", "timeout"):
                span.set_error(f"tool_{outcome.status}")
            if tracing.capture_content():
                span.set_attribute("gen_ai.tool.call.result", _capped(outcome.display_content))
            return outcome

    return traced  # type: ignore[return-value]


def tool_attributes(tool, ctx, arguments_raw: str) -> dict:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool.name,
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": ctx.tool_call_id,
        "gen_ai.agent.name": ctx.persona_name,
        "ongrid.tool.class": tool.tool_class,
        "ongrid.session.id": ctx.session_id,
        "ongrid.organization.id": ctx.organization_id,
    }
    attributes.update(_backend(arguments_raw))
    if tracing.capture_content():
        attributes["gen_ai.tool.call.arguments"] = _capped(redact_arguments(arguments_raw))
    return attributes


def _backend(arguments_raw: str) -> dict:
    """The data source, cluster, namespace, device or host a call names: identifiers, not content."""
    try:
        arguments = json.loads(arguments_raw) if arguments_raw.strip() else {}
    except ValueError:
        return {}
    if not isinstance(arguments, dict):
        return {}
    return {
        f"ongrid.backend.{key}": str(arguments[key])[:200]
        for key in BACKEND_ARGUMENTS
        if isinstance(arguments.get(key), str | int) and not isinstance(arguments.get(key), bool)
    }


# ---- the review gate -----------------------------------------------------------------------------


def traced_review(ask_reviewer: F) -> F:
    """The gate's `_ask_reviewer(runtime, proposal, …)`: the review span, with the reviewer's own
    agent span under it, and its verdict."""

    @functools.wraps(ask_reviewer)
    async def traced(runtime, proposal, *args, **kwargs):
        if not tracing.enabled():
            return await ask_reviewer(runtime, proposal, *args, **kwargs)
        with tracing.span("ongrid.review", _proposal_attributes(proposal)) as span:
            verdict = await ask_reviewer(runtime, proposal, *args, **kwargs)
            decision = {True: "approve", False: "reject"}.get(verdict.approved, "none")
            span.set_attribute("ongrid.review.decision", decision)
            return verdict

    return traced  # type: ignore[return-value]


def traced_human_wait(wait_for_human: F) -> F:
    """The gate's `_wait_for_human(proposal, …)`: how long a dual-sign change waited, and its end."""

    @functools.wraps(wait_for_human)
    async def traced(proposal, *args, **kwargs):
        if not tracing.enabled():
            return await wait_for_human(proposal, *args, **kwargs)
        with tracing.span("ongrid.approval.wait", _proposal_attributes(proposal)) as span:
            decided = await wait_for_human(proposal, *args, **kwargs)
            span.set_attributes(
                {
                    "ongrid.approval.decision": decided.decision,
                    "ongrid.approval.by_human": bool(decided.human_approver_id),
                }
            )
            return decided

    return traced  # type: ignore[return-value]


def _proposal_attributes(proposal) -> dict:
    return {
        "ongrid.proposal.id": proposal.pk,
        "gen_ai.tool.name": proposal.tool,
        "gen_ai.tool.call.id": proposal.tool_call_id,
        "ongrid.tool.class": proposal.tool_class,
        "ongrid.permission_mode": proposal.permission_mode,
        "ongrid.proposal.requires_human": proposal.requires_human,
    }


# ---- model calls -------------------------------------------------------------------------------


def traced_provider(provider):
    """`provider` with one `chat {model}` span per streamed call; itself while tracing is off."""
    if not tracing.enabled() or isinstance(provider, TracedProvider):
        return provider
    return TracedProvider(provider)


class TracedProvider:
    """Wraps an LLM provider (agents_app/llm/base.py); everything but `stream_chat` is the inner
    provider's own, attributes the runtime reads or sets included."""

    def __init__(self, inner) -> None:
        object.__setattr__(self, "_inner", inner)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value) -> None:
        setattr(self._inner, name, value)

    async def stream_chat(self, messages: list[dict], tools: list[dict], model: str | None = None, **options):
        requested = model or self._inner.default_model()
        span = tracing.start_span(
            f"chat {requested}", _request_attributes(self._inner, requested, messages), kind="client"
        )
        clock = time.monotonic()
        first: float | None = None
        retries = 0
        try:
            stream: AsyncIterator = self._inner.stream_chat(messages, tools, model=model, **options)
            async for event in stream:
                kind = type(event).__name__
                if kind == "LLMDelta" and first is None:
                    first = time.monotonic()
                elif kind == "LLMRetrying":
                    retries += 1
                elif kind == "LLMCompletion":
                    span.set_attributes(_completion_attributes(event))
                yield event
        except GeneratorExit:  # the reader stopped early (a stop request): not the model's failure
            span.set_attribute("ongrid.llm.closed_early", True)
            raise
        except BaseException as error:
            span.set_error(_error_type(error))
            raise
        finally:
            span.set_attribute("ongrid.llm.latency_ms", int((time.monotonic() - clock) * 1000))
            if first is not None:
                span.set_attribute("ongrid.llm.time_to_first_token_ms", int((first - clock) * 1000))
            span.set_attribute("ongrid.llm.retries", retries)
            span.end()


def _request_attributes(provider, model: str, messages: list[dict]) -> dict:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider.name,
        "gen_ai.request.model": model,
        "ongrid.llm.endpoint": getattr(provider, "endpoint", "") or None,
    }
    if tracing.capture_content():
        attributes["gen_ai.input.messages"] = _capped(redact_text(json.dumps(messages, ensure_ascii=False)))
    return attributes


def _completion_attributes(completion) -> dict:
    attributes = {
        "gen_ai.response.model": completion.model or None,
        "gen_ai.usage.input_tokens": completion.usage.get("prompt_tokens", 0),
        "gen_ai.usage.output_tokens": completion.usage.get("completion_tokens", 0),
        "gen_ai.usage.cache_read.input_tokens": completion.usage.get("cached_tokens"),
        "gen_ai.response.finish_reasons": [completion.finish_reason or "stop"],
        "ongrid.llm.tool_calls": [call.name for call in completion.tool_calls],
    }
    if tracing.capture_content():
        output = {"role": "assistant", "content": completion.text}
        attributes["gen_ai.output.messages"] = _capped(redact_text(json.dumps([output], ensure_ascii=False)))
    return attributes


def _error_type(error: BaseException) -> str:
    """The failure's type, or the HTTP status the endpoint answered; never its message."""
    status = getattr(error, "status", None)
    return str(status) if isinstance(status, int) else type(error).__name__
