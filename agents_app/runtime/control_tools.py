"""The coordinator's control tools (declared in `agents_app/toolsets/control/manifest.py`) and its
redirect stubs.

They are closures bound to one turn (its session, its publisher, the specialists it may
dispatch), built by the runtime for the coordinator only, so a worker can never reach them and
workers never nest (docs/runtime.md, "Coordinator and workers"). The stubs answer the names the
manifests say the model reaches for on the coordinator (docs/runtime.md, "Redirect stubs").
"""

from __future__ import annotations

import json
from typing import Protocol

from agents_app.runtime import dedupe, events
from agents_app.runtime.publishing import Publisher
from agents_app.toolsets.contract import Tool, ToolContext, ToolError, ToolResult
from agents_app.toolsets.control.manifest import AGENT_TOOL, SEND_MESSAGE, TASK_STOP
from agents_app.toolsets.registry import Redirect
from chat_app import services
from chat_app.models import ChatSession, MessageKind, MessageRole, SessionStatus


class WorkerRuntime(Protocol):
    """What the control tools need of the runtime that built them."""

    async def spawn_worker(
        self, parent, persona_name, description, prompt, publisher=None, tool_call_id=""
    ): ...

    async def stop_worker(self, worker_session_id: int, by: str = "") -> bool: ...


def agent_tool(
    runtime: WorkerRuntime, session: ChatSession, publisher: Publisher, specialists: list[str]
) -> Tool:
    valid = ", ".join(sorted(specialists)) or "(none)"

    async def handler(
        ctx: ToolContext, description: str = "", subagent_type: str = "", prompt: str = "", **extra
    ):
        if extra:
            raise ToolError(
                f"{AGENT_TOOL.name} takes only description, subagent_type and prompt; got {sorted(extra)}."
            )
        if not (description and subagent_type and prompt):
            raise ToolError(f"{AGENT_TOOL.name} needs description, subagent_type and prompt, all non-empty.")
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

    return Tool.from_spec(
        AGENT_TOOL, handler, description=f"{AGENT_TOOL.description} Valid subagent_type values: {valid}."
    )


def send_message_tool(session: ChatSession, publisher: Publisher) -> Tool:
    async def handler(ctx: ToolContext, message: str = ""):
        if not message.strip():
            raise ToolError(f"{SEND_MESSAGE.name} needs a non-empty message.")
        note = await services.aappend_message(
            session.pk, MessageRole.ASSISTANT, message, kind=MessageKind.NOTE
        )
        await publisher.publish(events.Note(session.pk, text=message, message_id=note.pk))
        return "Delivered to the user. Continue the turn."

    return Tool.from_spec(SEND_MESSAGE, handler)


def task_stop_tool(runtime: WorkerRuntime, session: ChatSession) -> Tool:
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
        await runtime.stop_worker(worker_id, by="the coordinator")
        return {"task_id": worker_id, "status": "stopping"}

    return Tool.from_spec(TASK_STOP, handler)


def stub_tool(stub: Redirect) -> Tool:
    async def handler(ctx: ToolContext, **arguments):
        return ToolResult(redirect_payload(stub, arguments), status="redirect")

    schema = {"type": "object", "properties": {}, "additionalProperties": True}
    return Tool(
        stub.name,
        f"Not available to the coordinator: dispatch {stub.specialist} via {AGENT_TOOL.name}.",
        schema,
        handler,
        "read",
        redirect=True,
    )


WHY_STUB_EXISTS = (
    "The coordinator's job is dispatch and triage. Deep-dive tools live on specialist workers; "
    "calling them inline is the wrong pattern."
)


def redirect_payload(stub: Redirect, arguments: dict | None = None) -> dict:
    """The JSON the stub returns: enough for the model to re-issue the call through AgentTool."""
    args = json.dumps(arguments or {}, ensure_ascii=False, sort_keys=True)[:300]
    brief = f"<self-contained task: what to find out with {stub.name} {args}, and why the user asked>"
    suggested = (
        f'{AGENT_TOOL.name}(description="<one line>", subagent_type="{stub.specialist}", '
        f"prompt={json.dumps(brief, ensure_ascii=False)})"
    )
    return {
        "status": "redirect",
        "hint": (
            f"{stub.name} is not available in coordinator scope. Re-invoke via {AGENT_TOOL.name} to dispatch "
            f"to {stub.specialist}."
        ),
        "reason": stub.reason,
        "suggested_call": suggested,
        "why_stub_exists": WHY_STUB_EXISTS,
    }
