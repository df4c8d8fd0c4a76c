"""The coordinator's control tools: AgentTool, SendMessage, TaskStop, and the redirect stubs.

They are closures bound to one turn (its session, its publisher, the specialists it may
dispatch), built by the runtime for the coordinator only, so a worker can never reach them and
workers never nest (docs/runtime.md, "Coordinator and workers").
"""

from __future__ import annotations

from typing import Protocol

from agents_app.runtime import dedupe
from agents_app.runtime.publishing import Publisher
from agents_app.runtime.redirect_stubs import redirect_payload
from agents_app.toolsets.base import Tool, ToolContext, ToolError, ToolResult
from chat_app import services
from chat_app.models import ChatSession, MessageKind, MessageRole, SessionStatus


class WorkerRuntime(Protocol):
    """What the control tools need of the runtime that built them."""

    async def spawn_worker(
        self, parent, persona_name, description, prompt, publisher=None, tool_call_id=""
    ): ...

    async def stop_worker(self, worker_session_id: int, by: str = "") -> bool: ...


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


def agent_tool(
    runtime: WorkerRuntime, session: ChatSession, publisher: Publisher, specialists: list[str]
) -> Tool:
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

    schema = {"type": "object", "properties": {"task_id": {"type": "integer"}}, "required": ["task_id"]}
    return Tool("TaskStop", "Stop a running worker by its task_id (idempotent).", schema, handler, "read")


def stub_tool(stub) -> Tool:
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
