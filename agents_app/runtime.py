"""The multi-agent runtime: one coordinator per chat session, N parallel workers, no nesting.

`Runtime.run_turn` runs the coordinator's ReAct loop over the persisted history. Its control
tools (AgentTool, SendMessage, TaskStop) are closures bound to the turn, so a worker can never
reach them: workers get a toolbag built without them (R9). Every session row is written before
its agent runs and closed on every terminal path, crashes and cancellation included (R12).
Events go to the channel-layer group of the root session and to any local listener.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field, is_dataclass
from typing import Any

from channels.layers import get_channel_layer

from agents_app import dedupe
from agents_app.catalog import agent_catalog
from agents_app.kernel import AgentResult, CancelToken, run_agent
from agents_app.llm import get_provider
from agents_app.personas import COORDINATOR, REVIEWER, Persona
from agents_app.redirect_stubs import STUBS, redirect_payload
from agents_app.registry import aget_registry, get_skill_registry
from agents_app.toolbag import build_toolbag
from agents_app.tools.base import Tool, ToolContext, ToolError, ToolResult, load_builtin_tools
from chat_app import services
from chat_app.groups import session_group
from chat_app.models import ChatMessage, ChatSession, MessageKind, MessageRole, SessionStatus

log = logging.getLogger(__name__)

HISTORY_LIMIT = 50
STOP_POLL_SECONDS = 1.0
HEARTBEAT_EVERY = 30  # polls
NOT_DISPATCHABLE = (COORDINATOR, REVIEWER)

Listener = Callable[[dict], Awaitable[None]]


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


@dataclass
class Publisher:
    """Sends runtime events to every open websocket of the root session, and to local listeners."""

    root_session_id: int
    listeners: list[Listener] = field(default_factory=list)

    async def publish(self, event: dict) -> None:
        event = _jsonable(event)
        layer = get_channel_layer()
        if layer is not None:
            try:
                await layer.group_send(
                    session_group(self.root_session_id), {"type": "turn.event", "event": event}
                )
            except Exception:  # noqa: BLE001 - a broken layer must not kill the turn
                log.exception("could not publish %s", event.get("event"))
        for listener in self.listeners:
            await listener(event)


@dataclass
class KernelSink:
    """Adapts kernel events to runtime events for one agent session."""

    publisher: Publisher
    session_id: int
    is_worker: bool

    async def emit(self, event: Any) -> None:
        kind = type(event).__name__
        data = asdict(event) if is_dataclass(event) else dict(event)
        if self.is_worker and kind == "TextDelta":
            return  # the user never sees a worker's raw transcript (R20)
        names = {
            "TextDelta": "text.delta",
            "ToolStart": "tool.started",
            "ToolEnd": "tool.ended",
            "Final": "agent.final",
            "Error": "agent.error",
        }
        await self.publisher.publish(
            {"event": names.get(kind, kind), "session": self.session_id, "worker": self.is_worker, **data}
        )


@dataclass
class WorkerOutcome:
    session_id: int
    status: str
    text: str
    error: str = ""


class Runtime:
    """One per process. Holds the cancel tokens of the agents this process runs."""

    def __init__(self) -> None:
        self._tokens: dict[int, CancelToken] = {}
        self._root_of: dict[int, int] = {}  # running session -> its root, so each turn watches its own

    # ---- turns -------------------------------------------------------------------------------

    async def run_turn(self, session_id: int, listeners: list[Listener] | None = None) -> AgentResult | None:
        """Run the coordinator over the session's history; the user's message is already saved."""
        session = await ChatSession.objects.aget(pk=session_id)
        publisher = Publisher(session.root_session_id or session.pk, list(listeners or []))
        token = self._register(session.pk, publisher.root_session_id)
        watcher = asyncio.create_task(self._watch_stop(publisher.root_session_id))
        asked = (
            await ChatMessage.objects.filter(session_id=session.pk, role=MessageRole.USER)
            .order_by("-seq")
            .afirst()
        )
        await publisher.publish(
            {
                "event": "turn.started",
                "session": session.pk,
                "message_id": asked.pk if asked else None,
                "user_text": asked.content if asked else "",
            }
        )
        result: AgentResult | None = None
        error = ""
        try:
            result = await self._run_coordinator(session, publisher, token)
            error = result.error or ""
        except asyncio.CancelledError:
            error = "The turn was cancelled."
            raise
        except Exception as exc:  # noqa: BLE001 - a crash must still end the turn cleanly
            log.exception("turn of session %s crashed", session.pk)
            error = f"The turn failed: {type(exc).__name__}: {exc}"
        finally:
            watcher.cancel()
            self._forget(session.pk)
            await self._finish_turn(session, publisher, result, error)
        return result

    async def _run_coordinator(
        self, session: ChatSession, publisher: Publisher, token: CancelToken
    ) -> AgentResult:
        registry = await aget_registry(session.organization_id)
        persona = registry.by_name(COORDINATOR)
        if persona is None:
            raise RuntimeError("No coordinator persona named 'default' is loaded.")
        specialists = [p for p in registry.all() if p.name not in NOT_DISPATCHABLE]
        catalog = agent_catalog(specialists)
        ctx = ToolContext(
            organization_id=session.organization_id,
            session_id=session.pk,
            user_id=session.user_id,
            persona_name=COORDINATOR,
        )
        tools = self._coordinator_tools(persona, session, publisher, [p.name for p in specialists])
        messages = await services.ahistory(session.pk, HISTORY_LIMIT)
        result = await run_agent(
            persona=persona,
            messages=messages,
            tools=tools,
            ctx=ctx,
            provider=get_provider(persona.model),
            sink=KernelSink(publisher, session.pk, is_worker=False),
            cancel=token,
            skills=self._skills(persona),
            catalog=catalog,
            model=persona.model,
        )
        await self._persist(session.pk, result.new_messages)
        return result

    async def _finish_turn(self, session, publisher, result: AgentResult | None, error: str) -> None:
        status = result.status if result is not None else SessionStatus.FAILED
        text = result.text if result is not None else ""
        message_id = None
        if error and status != "completed":
            note = await services.aappend_message(
                session.pk, MessageRole.ASSISTANT, error, kind=MessageKind.ERROR
            )
            message_id = note.pk
        await services.aend_turn(
            session.pk,
            error=error if status != "completed" else "",
            usage=result.usage if result is not None else None,
        )
        await publisher.publish(
            {
                "event": "turn.ended",
                "session": session.pk,
                "status": status,
                "text": text,
                "error": error,
                "message_id": message_id,
            }
        )

    # ---- workers -----------------------------------------------------------------------------

    async def spawn_worker(
        self,
        parent: ChatSession,
        persona_name: str,
        description: str,
        prompt: str,
        publisher: Publisher | None = None,
        tool_call_id: str = "",
    ) -> WorkerOutcome:
        """Run one worker to a terminal state and return its answer. Never spawns the reviewer."""
        if persona_name in NOT_DISPATCHABLE:
            raise ToolError(f"{persona_name!r} cannot be dispatched.")
        persona = (await aget_registry(parent.organization_id)).by_name(persona_name)
        if persona is None:
            raise ToolError(f"Unknown subagent_type {persona_name!r}.")
        return await self._run_worker(parent, persona, description, prompt, publisher, tool_call_id)

    async def spawn_reviewer(
        self,
        parent: ChatSession,
        description: str,
        prompt: str,
        tool_call_id: str,
        publisher: Publisher | None = None,
    ) -> WorkerOutcome:
        """Run the reviewer on one held call (R16). Only the review gate calls this.

        The reviewer's row hangs under the session whose call is held (`spawned_by_call` = that
        call), and it gets read tools only, whatever a mounted persona file lists.
        """
        persona = (await aget_registry(parent.organization_id)).by_name(REVIEWER)
        if persona is None:
            raise RuntimeError("No reviewer persona is loaded.")
        bag = build_toolbag(persona, load_builtin_tools(), coordinator=False)
        tools = [t for t in bag if t.tool_class == "read"]
        return await self._run_worker(parent, persona, description, prompt, publisher, tool_call_id, tools)

    async def _run_worker(
        self,
        parent,
        persona: Persona,
        description,
        prompt,
        publisher,
        tool_call_id: str = "",
        tools: list[Tool] | None = None,
    ) -> WorkerOutcome:
        publisher = publisher or Publisher(parent.root_session_id or parent.pk)
        worker = await services.aopen_worker_session(parent, persona.name, description, prompt, tool_call_id)
        await publisher.publish(
            {
                "event": "worker.started",
                "session": worker.pk,
                "parent": parent.pk,
                "persona": persona.name,
                "description": description,
                "status": "pending",
                "call_id": tool_call_id,
            }
        )
        token = self._register(worker.pk, publisher.root_session_id)
        outcome = WorkerOutcome(worker.pk, SessionStatus.FAILED, "", "The worker ended unexpectedly.")
        try:
            await services.amark_running(worker.pk)
            await publisher.publish({"event": "worker.status", "session": worker.pk, "status": "running"})
            outcome = await self._drive_worker(worker, persona, prompt, publisher, token, tools)
        except asyncio.CancelledError:
            outcome = WorkerOutcome(worker.pk, SessionStatus.KILLED, "", "Cancelled.")
            raise
        except Exception as exc:  # noqa: BLE001
            log.exception("worker %s crashed", worker.pk)
            outcome = WorkerOutcome(worker.pk, SessionStatus.FAILED, "", f"{type(exc).__name__}: {exc}")
        finally:
            self._forget(worker.pk)
            await services.aclose_session(worker.pk, outcome.status, result=outcome.text, error=outcome.error)
            await publisher.publish(
                {
                    "event": "worker.ended",
                    "session": worker.pk,
                    "status": outcome.status,
                    "result": outcome.text,
                    "error": outcome.error,
                }
            )
        return outcome

    async def _drive_worker(self, worker, persona, prompt, publisher, token, tools=None) -> WorkerOutcome:
        ctx = ToolContext(
            organization_id=worker.organization_id,
            session_id=worker.pk,
            user_id=worker.user_id,
            persona_name=persona.name,
        )
        if tools is None:
            tools = build_toolbag(persona, load_builtin_tools(), coordinator=False)
        result = await run_agent(
            persona=persona,
            messages=[{"role": "user", "content": prompt}],
            tools=tools,
            ctx=ctx,
            provider=get_provider(persona.model),
            sink=KernelSink(publisher, worker.pk, is_worker=True),
            cancel=token,
            skills=self._skills(persona),
            model=persona.model,
        )
        await self._persist(worker.pk, result.new_messages)
        status = {
            "completed": SessionStatus.COMPLETED,
            "budget_exhausted": SessionStatus.COMPLETED,
            "killed": SessionStatus.KILLED,
        }.get(result.status, SessionStatus.FAILED)
        text = result.text or ""
        if result.status == "budget_exhausted":
            text = f"[partial: the worker's budget ran out]\n{text}"
        return WorkerOutcome(worker.pk, status, text, result.error or "")

    async def stop_worker(self, worker_session_id: int) -> bool:
        """Stop a running worker wherever it runs: the row flag reaches other processes."""
        requested = await services.arequest_stop(worker_session_id)
        token = self._tokens.get(worker_session_id)
        if token is not None:
            token.cancel("stopped")
        return requested

    async def stop_session(self, session_id: int) -> int:
        """The user's Stop: the turn and every open worker under it."""
        ids = [session_id] + [
            pk
            async for pk in ChatSession.objects.filter(
                root_session_id=session_id, closed_at__isnull=True
            ).values_list("pk", flat=True)
        ]
        stopped = 0
        for pk in ids:
            stopped += await self.stop_worker(pk)
        return stopped

    # ---- plumbing ----------------------------------------------------------------------------

    def _register(self, session_id: int, root_id: int) -> CancelToken:
        async def flagged() -> str | None:
            return "stopped" if await services.astop_requested(session_id) else None

        token = CancelToken(check=flagged)
        self._tokens[session_id] = token
        self._root_of[session_id] = root_id
        return token

    def _forget(self, session_id: int) -> None:
        self._tokens.pop(session_id, None)
        self._root_of.pop(session_id, None)

    async def _watch_stop(self, root_id: int) -> None:
        """Turn cross-process stop flags into local cancellation (a stop lands even while an LLM call
        streams), and keep this turn's rows' heartbeat fresh for the reaper."""
        polls = 0
        while True:
            await asyncio.sleep(STOP_POLL_SECONDS)
            polls += 1
            ids = [pk for pk, root in list(self._root_of.items()) if root == root_id]
            flagged = await _stop_flagged(ids)
            for pk in flagged:
                token = self._tokens.get(pk)
                if token is not None and not token.cancelled:
                    token.cancel("stopped")
            if polls % HEARTBEAT_EVERY == 0:
                await services.aheartbeat(ids)

    @staticmethod
    def _skills(persona: Persona) -> list:
        skills = get_skill_registry()
        return [s for s in (skills.by_name(name) for name in persona.skills) if s is not None]

    @staticmethod
    async def _persist(session_id: int, new_messages: list[dict]) -> None:
        for message in new_messages:
            await services.aappend_message(
                session_id,
                message["role"],
                message.get("content") or "",
                tool_calls=message.get("tool_calls") or [],
                tool_call_id=message.get("tool_call_id", ""),
            )

    def _coordinator_tools(self, persona, session, publisher, specialists: list[str]) -> list[Tool]:
        control = {t.name: t for t in self._control_tools(session, publisher, specialists)}
        bag = build_toolbag(persona, {**load_builtin_tools(), **control}, coordinator=True)
        present = {t.name for t in bag}
        bag += [_stub_tool(stub) for stub in STUBS if stub.name not in present]
        return bag

    def _control_tools(
        self, session: ChatSession, publisher: Publisher, specialists: list[str]
    ) -> list[Tool]:
        return [
            agent_tool(self, session, publisher, specialists),
            send_message_tool(session, publisher),
            task_stop_tool(self, session),
        ]


async def _stop_flagged(ids: list[int]) -> list[int]:
    if not ids:
        return []
    return [
        pk
        async for pk in ChatSession.objects.filter(pk__in=ids, stop_requested_at__isnull=False).values_list(
            "pk", flat=True
        )
    ]


# ---- control tools (coordinator only) ------------------------------------------------------------

AGENT_TOOL_SCHEMA = {
    "type": "object",
    "properties": {
        "description": {"type": "string", "description": "One-line summary of the task, shown on the tile."},
        "subagent_type": {"type": "string", "description": "Name of the specialist persona to dispatch."},
        "prompt": {
            "type": "string",
            "description": "The complete, self-contained brief. The worker cannot see this conversation: "
            "include ids, device names, times and the user's exact words.",
        },
    },
    "required": ["description", "subagent_type", "prompt"],
}


def agent_tool(runtime: Runtime, session: ChatSession, publisher: Publisher, specialists: list[str]) -> Tool:
    valid = ", ".join(sorted(specialists)) or "(none)"

    async def handler(
        ctx: ToolContext, description: str = "", subagent_type: str = "", prompt: str = "", **extra
    ):
        if extra:
            raise ToolError(
                f"AgentTool takes only description, subagent_type and prompt; got {sorted(extra)}."
            )
        if not (description and subagent_type and prompt):
            raise ToolError("AgentTool needs description, subagent_type and prompt, all non-empty.")
        if subagent_type not in specialists:
            raise ToolError(f"Unknown subagent_type {subagent_type!r}. Valid values: {valid}.")
        key = dedupe.dispatch_key(session.root_session_id or session.pk, subagent_type, prompt)
        previous = dedupe.DISPATCHES.get(key)
        if previous is not None:
            return ToolResult(
                {
                    "status": "deduped",
                    "hint": "You already dispatched this exact task in the last 120 s; "
                    "here is its result. Do not dispatch it again.",
                    "task_id": previous.worker_session_id,
                    "worker_status": previous.status,
                    "result": previous.text,
                },
                status="deduped",
            )
        outcome = await runtime.spawn_worker(
            session, subagent_type, description, prompt, publisher, tool_call_id=ctx.tool_call_id
        )
        if outcome.status != SessionStatus.KILLED:
            dedupe.DISPATCHES.put(key, outcome.session_id, outcome.status, outcome.text or outcome.error)
        payload = {"task_id": outcome.session_id, "status": outcome.status, "result": outcome.text}
        if outcome.error:
            payload["error"] = outcome.error
        status = {"completed": "ok", "killed": "killed"}.get(outcome.status, "error")
        return ToolResult(payload, status=status)

    return Tool(
        "AgentTool",
        "Dispatch a specialist worker for deep work (5+ inspection calls, host-side tools, cross-host or "
        "cross-signal analysis). Blocks until the worker finishes and returns its answer. "
        f"Valid subagent_type values: {valid}.",
        AGENT_TOOL_SCHEMA,
        handler,
        "read",
        timeout=900.0,
    )


def send_message_tool(session: ChatSession, publisher: Publisher) -> Tool:
    async def handler(ctx: ToolContext, message: str = ""):
        if not message.strip():
            raise ToolError("SendMessage needs a non-empty message.")
        note = await services.aappend_message(
            session.pk, MessageRole.ASSISTANT, message, kind=MessageKind.NOTE
        )
        await publisher.publish(
            {"event": "note", "session": session.pk, "text": message, "message_id": note.pk}
        )
        return "Delivered to the user. Continue the turn."

    schema = {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}
    return Tool(
        "SendMessage",
        "Send an intermediate message to the user without ending the turn.",
        schema,
        handler,
        "read",
    )


def task_stop_tool(runtime: Runtime, session: ChatSession) -> Tool:
    async def handler(ctx: ToolContext, task_id: int | str = ""):
        try:
            worker_id = int(task_id)
        except (TypeError, ValueError):
            raise ToolError("task_id must be the worker's session id (a number).") from None
        worker = await ChatSession.objects.filter(
            pk=worker_id, root_session_id=session.root_session_id or session.pk
        ).afirst()
        if worker is None:
            raise ToolError(f"No worker {worker_id} in this chat.")
        if worker.closed_at is not None:
            return {"task_id": worker_id, "status": worker.status, "note": "already finished"}
        await runtime.stop_worker(worker_id)
        return {"task_id": worker_id, "status": "stopping"}

    schema = {"type": "object", "properties": {"task_id": {"type": "integer"}}, "required": ["task_id"]}
    return Tool("TaskStop", "Stop a running worker by its task_id (idempotent).", schema, handler, "read")


def _stub_tool(stub) -> Tool:
    async def handler(ctx: ToolContext, **arguments):
        return ToolResult(redirect_payload(stub, arguments), status="redirect")

    schema = {"type": "object", "properties": {}, "additionalProperties": True}
    return Tool(
        stub.name,
        f"Not available to the coordinator: dispatch {stub.specialist} via AgentTool.",
        schema,
        handler,
        "read",
    )


_runtime: Runtime | None = None


def get_runtime() -> Runtime:
    global _runtime
    if _runtime is None:
        _runtime = Runtime()
    return _runtime
