"""The multi-agent runtime: the lifecycle of a turn, one coordinator per chat session, N parallel
workers, no nesting.

`Runtime.run_turn` runs the coordinator's ReAct loop over the persisted history with the
control tools of `control_tools` bound to the turn; workers get a toolbag built without them.
Every session row is written before its agent runs and closed on every terminal path, crashes and
cancellation included (docs/runtime.md, "Worker lifecycle"). Events leave through `publishing`.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from dataclasses import dataclass, replace

from channels.layers import get_channel_layer
from django.db import Error as DatabaseError
from django.utils import timezone

from agents_app.kernel.loop import AgentResult, run_agent
from agents_app.llm import aget_provider
from agents_app.llm.model_aliases import resolve_model
from agents_app.models import RequestedCall
from agents_app.personas.catalog import agent_catalog
from agents_app.personas.registry import aget_registry
from agents_app.personas.schema import COORDINATOR, REPORTER, REVIEWER, Persona, matches_any
from agents_app.personas.skills import SkillOffer, aoffer_for
from agents_app.runtime import control_tools, events
from agents_app.runtime.compaction import history_for_turn
from agents_app.runtime.publishing import KernelSink, Listener, Publisher, send_to_group
from agents_app.runtime.reply_language import areply_language, brief_line, reminder_line
from agents_app.tools.binding import organization_tools
from agents_app.tools.cancel import CancelToken
from agents_app.tools.invoke import invoke_tool
from agents_app.tools.toolbag import build_toolbag
from agents_app.toolsets.contract import Tool, ToolContext, ToolError
from agents_app.toolsets.registry import redirects
from agents_app.toolsets.skills.handlers import skill_tool
from agents_app.toolsets.skills.manifest import SKILL_TOOL
from agents_app.toolsets.tracing import traced_detached, traced_turn, traced_worker
from audit_app.recorder import record_llm_call
from chat_app import services
from chat_app.models import ChatMessage, ChatSession, MessageKind, MessageRole, SessionKind, SessionStatus
from ops_app.core.turn_memo import turn_scope

log = logging.getLogger(__name__)

# Stops are pushed (a channel-layer message to the group of the turn's root session, which the
# process running the turn listens to); the row flag is also polled, as a fallback, this often.
STOP_POLL_SECONDS = 1.0
HEARTBEAT_EVERY = 30  # polls
# The stop listener re-joins its group this often: a restarted Redis forgets every group while a
# blocking read, retried by the client on a new connection, goes on as if nothing happened.
STOP_REJOIN_SECONDS = 5.0
# A turn's last writes (its messages, the error bubble, the session back to idle) are retried
# with these pauses when the database fails (a restart, a failover), before the turn gives up
# and leaves the row to the reaper.
FINAL_WRITE_DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0)
STOP_MESSAGE = "turn.stop"
NOT_DISPATCHABLE = (COORDINATOR, REVIEWER, REPORTER)


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
        self._poller: asyncio.Task | None = None  # polls every running agent's stop flag (_poll_flags)

    # ---- turns -------------------------------------------------------------------------------

    @traced_turn
    async def run_turn(
        self, session_id: int, listeners: list[Listener] | None = None, extra_tools: list[Tool] | None = None
    ) -> AgentResult | None:
        """Run the coordinator over the session's history; the user's message is already saved.

        A root session of kind `investigation` is run by its own persona (`agent_id`) instead,
        coordinator-less, with its read toolbag plus `extra_tools` (docs/investigations.md).
        Its agents share one turn memo (ops_app.core.turn_memo): configuration is read once."""
        with turn_scope():
            return await self._turn(session_id, listeners, extra_tools)

    async def _turn(
        self, session_id: int, listeners: list[Listener] | None, extra_tools: list[Tool] | None
    ) -> AgentResult | None:
        session = await ChatSession.objects.aget(pk=session_id)
        publisher = Publisher(session.root_session_id or session.pk, list(listeners or []))
        token = self._register(session.pk, publisher.root_session_id)
        watcher = self._watch_stop(publisher.root_session_id)
        asked = (
            await ChatMessage.objects.filter(session_id=session.pk, role=MessageRole.USER)
            .order_by("-seq")
            .afirst()
        )
        await publisher.publish(
            events.TurnStarted(
                session.pk, message_id=asked.pk if asked else None, user_text=asked.content if asked else ""
            )
        )
        result: AgentResult | None = None
        error = ""
        try:
            requested = await _take_requested(session.pk)
            if requested is not None:
                result = await self._run_requested(session, publisher, requested)
            else:
                result = await self._run_coordinator(session, publisher, token, extra_tools)
            error = result.error or ""
        except asyncio.CancelledError:
            error = token.reason or "The turn was cancelled."
            raise
        except Exception as exc:  # noqa: BLE001 - a crash must still end the turn cleanly
            log.exception("turn of session %s crashed", session.pk)
            error = f"The turn failed: {type(exc).__name__}: {exc}"
        finally:
            _detach(watcher)
            self._forget(session.pk)
            await self._finish_turn(session, publisher, result, error)
        return result

    async def _run_coordinator(
        self, session: ChatSession, publisher: Publisher, token: CancelToken, extra_tools: list[Tool] | None
    ) -> AgentResult:
        registry = await aget_registry(session.organization_id)
        available = await organization_tools(session.organization_id)
        if session.kind == SessionKind.INVESTIGATION and session.parent_session_id is None:
            persona = registry.by_name(session.agent_id)
            if persona is None:
                raise RuntimeError(f"No persona named {session.agent_id!r} is loaded.")
            catalog = None
            tools = build_toolbag(persona, available, coordinator=False) + list(extra_tools or [])
        else:
            persona = registry.by_name(COORDINATOR)
            if persona is None:
                raise RuntimeError("No coordinator persona named 'default' is loaded.")
            specialists = [p for p in registry.all() if p.name not in NOT_DISPATCHABLE]
            catalog = agent_catalog(specialists)
            tools = self._coordinator_tools(
                persona, session, publisher, [p.name for p in specialists], available
            )
        ctx = ToolContext(
            organization_id=session.organization_id,
            session_id=session.pk,
            user_id=session.user_id,
            persona_name=persona.name,
        )
        provider = await aget_provider(persona.model, session.organization_id)
        messages = await history_for_turn(
            session.pk,
            provider,
            resolve_model(persona.model, provider, None),
            _recorder_for(provider),
            session.organization_id,
        )
        language = await areply_language(session)
        tools, offer = await _with_skills(persona, session.organization_id, tools)
        result = await run_agent(
            persona=persona,
            messages=messages,
            tools=tools,
            ctx=ctx,
            provider=provider,
            sink=KernelSink(publisher, session.pk, is_worker=False),
            cancel=token,
            skills=offer.active,
            skill_catalog=offer.catalog,
            catalog=catalog,
            model=resolve_model(persona.model, provider, None),
            recorder=_recorder_for(provider),
            language_line=reminder_line(language),
        )
        await self._persist(session.pk, result.new_messages)
        return result

    async def _run_requested(
        self, session: ChatSession, publisher: Publisher, call: RequestedCall
    ) -> AgentResult:
        """A one-click change (`agents_app/gate/direct_calls.py`): the owning persona's worker makes
        exactly this call, through the same chain (gate, audit) as a call its model chose."""
        persona = (await aget_registry(session.organization_id)).by_name(call.persona)
        tool = (await organization_tools(session.organization_id)).get(call.tool)
        if persona is None or tool is None:
            missing = call.persona if persona is None else call.tool
            return AgentResult("failed", "", {}, error=f"{missing} is no longer available; nothing was run.")
        call_id = f"{RequestedCall.CALL_ID_PREFIX}{call.pk}"

        async def make_the_call(worker, persona, prompt, publisher, token, tools, provider) -> WorkerOutcome:
            ctx = ToolContext(
                organization_id=worker.organization_id,
                session_id=worker.pk,
                user_id=worker.user_id,
                persona_name=persona.name,
                tool_call_id=call_id,
            )
            arguments = json.dumps(call.arguments, ensure_ascii=False)
            outcome = await invoke_tool(tool, ctx, arguments, cancel=token)
            await self._persist(worker.pk, _one_call_messages(call_id, tool.name, arguments, outcome.content))
            if outcome.status == "ok":
                return WorkerOutcome(worker.pk, SessionStatus.COMPLETED, outcome.content, "")
            status = SessionStatus.KILLED if outcome.status == "killed" else SessionStatus.FAILED
            return WorkerOutcome(worker.pk, status, "", outcome.error or outcome.content)

        outcome = await self._run_worker(
            session, persona, call.description, call.description, publisher, call_id, [tool], make_the_call
        )
        if outcome.status == SessionStatus.KILLED:
            return AgentResult("killed", "", {}, error=outcome.error, cut_off=f"running {call.tool}")
        if outcome.status == SessionStatus.COMPLETED:
            text = f"Done: `{call.tool}` ran.\n\n{outcome.text}"
        else:
            text = f"Not done: `{call.tool}` did not run. {outcome.error}"
        await self._persist(session.pk, [{"role": "assistant", "content": text}])
        return AgentResult("completed", text, {})

    async def _finish_turn(self, session, publisher, result: AgentResult | None, error: str) -> None:
        status = result.status if result is not None else SessionStatus.FAILED
        text = result.text if result is not None else ""
        message_id = None
        note = ""
        if result is None and "".join(publisher.streamed).strip():
            # A crash (the database gone for good, a bug): keep what the person already saw.
            text = "".join(publisher.streamed)
            await _retrying(
                "the partial answer", services.aappend_message, session.pk, MessageRole.ASSISTANT, text
            )
        if status == SessionStatus.KILLED:
            # A stop is not a failure: a neutral line that says who stopped it and what was cut
            # off, kept in the history so the next turn's coordinator knows the work is unfinished.
            note = stopped_note(error, result.cut_off if result is not None else "")
            message = await _retrying(
                "the stop note",
                services.aappend_message,
                session.pk,
                MessageRole.ASSISTANT,
                note,
                kind=MessageKind.STOPPED,
            )
            message_id = message.pk
        elif error and status != "completed":
            message = await _retrying(
                "the error message",
                services.aappend_message,
                session.pk,
                MessageRole.ASSISTANT,
                error,
                kind=MessageKind.ERROR,
            )
            message_id = message.pk
        await _retrying(
            "the end of the turn",
            services.aend_turn,
            session.pk,
            error=error if status != "completed" else "",
            usage=result.usage if result is not None else None,
        )
        await publisher.publish(
            events.TurnEnded(
                session.pk, status=status, text=text, error=error, stopped=note, message_id=message_id
            )
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
        # The brief says which language the final answer is in; the AgentTool call's own arguments
        # (audited as the model sent them) are left untouched.
        line = brief_line(await areply_language(parent))
        if line:
            prompt = f"{prompt.rstrip()}\n\n{line}"
        return await self._run_worker(parent, persona, description, prompt, publisher, tool_call_id)

    async def spawn_reviewer(
        self,
        parent: ChatSession,
        description: str,
        prompt: str,
        tool_call_id: str,
        publisher: Publisher | None = None,
    ) -> WorkerOutcome:
        """Run the reviewer on one held call (docs/review-gate.md). Only the review gate calls this.

        The reviewer's row hangs under the session whose call is held (`spawned_by_call` = that
        call), and it gets read tools only, whatever a mounted persona file lists.
        """
        persona = (await aget_registry(parent.organization_id)).by_name(REVIEWER)
        if persona is None:
            raise RuntimeError("No reviewer persona is loaded.")
        bag = build_toolbag(persona, await organization_tools(parent.organization_id), coordinator=False)
        tools = [t for t in bag if t.tool_class == "read"]
        return await self._run_worker(parent, persona, description, prompt, publisher, tool_call_id, tools)

    @traced_worker
    async def _run_worker(
        self,
        parent,
        persona: Persona,
        description,
        prompt,
        publisher,
        tool_call_id: str = "",
        tools: list[Tool] | None = None,
        drive=None,
    ) -> WorkerOutcome:
        publisher = publisher or Publisher(parent.root_session_id or parent.pk)
        drive = drive or self._drive_worker
        worker = await services.aopen_worker_session(parent, persona.name, description, prompt, tool_call_id)
        await publisher.publish(
            events.WorkerStarted(
                worker.pk,
                parent=parent.pk,
                persona=persona.name,
                description=description,
                call_id=tool_call_id,
            )
        )
        token = self._register(worker.pk, publisher.root_session_id)
        outcome = WorkerOutcome(worker.pk, SessionStatus.FAILED, "", "The worker ended unexpectedly.")
        try:
            # The organization's tools and endpoint are looked up before the worker shows as
            # running, so a stop that follows "running" finds it at its first step.
            if tools is None:
                available = await organization_tools(worker.organization_id)
                tools = build_toolbag(persona, available, coordinator=False)
            provider = await aget_provider(persona.model, worker.organization_id)
            persona = replace(persona, model=await _worker_model(persona, parent, provider))
            await services.amark_running(worker.pk)
            await publisher.publish(events.WorkerStatus(worker.pk, status=SessionStatus.RUNNING))
            outcome = await drive(worker, persona, prompt, publisher, token, tools, provider)
        except asyncio.CancelledError:  # the coordinator's own stop cancelled the dispatch
            reason = token.reason or self._stop_reason_of(publisher.root_session_id) or "Cancelled."
            outcome = WorkerOutcome(worker.pk, SessionStatus.KILLED, "", reason)
            raise
        except Exception as exc:  # noqa: BLE001
            log.exception("worker %s crashed", worker.pk)
            outcome = WorkerOutcome(worker.pk, SessionStatus.FAILED, "", f"{type(exc).__name__}: {exc}")
        finally:
            self._forget(worker.pk)
            await services.aclose_session(worker.pk, outcome.status, result=outcome.text, error=outcome.error)
            await publisher.publish(
                events.WorkerEnded(worker.pk, status=outcome.status, result=outcome.text, error=outcome.error)
            )
        return outcome

    async def _drive_worker(
        self, worker, persona, prompt, publisher, token, tools, provider
    ) -> WorkerOutcome:
        ctx = ToolContext(
            organization_id=worker.organization_id,
            session_id=worker.pk,
            user_id=worker.user_id,
            persona_name=persona.name,
        )
        tools, offer = await _with_skills(persona, worker.organization_id, tools)
        result = await run_agent(
            persona=persona,
            messages=[{"role": "user", "content": prompt}],
            tools=tools,
            ctx=ctx,
            provider=provider,
            sink=KernelSink(publisher, worker.pk, is_worker=True),
            cancel=token,
            skills=offer.active,
            skill_catalog=offer.catalog,
            model=persona.model,
            recorder=_recorder_for(provider),
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

    @traced_detached
    async def run_detached(
        self, session: ChatSession, persona: Persona, prompt: str, tools: list[Tool]
    ) -> WorkerOutcome:
        """Run one agent in a root work session a surface opened itself (a scheduled inspection or
        report, docs/schedules.md): no coordinator above it; its own tools; closed on every path."""
        with turn_scope():
            return await self._detached(session, persona, prompt, tools)

    async def _detached(
        self, session: ChatSession, persona: Persona, prompt: str, tools: list[Tool]
    ) -> WorkerOutcome:
        publisher = Publisher(session.pk)
        token = self._register(session.pk, session.pk)
        outcome = WorkerOutcome(session.pk, SessionStatus.FAILED, "", "The agent ended unexpectedly.")
        try:
            provider = await aget_provider(persona.model, session.organization_id)
            await services.amark_running(session.pk)
            outcome = await self._drive_worker(session, persona, prompt, publisher, token, tools, provider)
        except asyncio.CancelledError:
            outcome = WorkerOutcome(session.pk, SessionStatus.KILLED, "", "Cancelled.")
            raise
        except Exception as exc:  # noqa: BLE001 - the row must be closed whatever happened
            log.exception("detached session %s crashed", session.pk)
            outcome = WorkerOutcome(session.pk, SessionStatus.FAILED, "", f"{type(exc).__name__}: {exc}")
        finally:
            self._forget(session.pk)
            await services.aclose_session(
                session.pk, outcome.status, result=outcome.text, error=outcome.error
            )
        return outcome

    async def stop_worker(self, worker_session_id: int, by: str = "") -> bool:
        """Stop one running agent wherever it runs (TaskStop, a tile's Stop button)."""
        return await self._stop([worker_session_id], stop_reason(by))

    async def stop_session(self, session_id: int, by: str = "") -> int:
        """The user's Stop: the turn and every open worker under it."""
        ids = [session_id] + [
            pk
            async for pk in ChatSession.objects.filter(
                root_session_id=session_id, closed_at__isnull=True
            ).values_list("pk", flat=True)
        ]
        return await self._stop(ids, stop_reason(by))

    async def _stop(self, ids: list[int], reason: str) -> int:
        """Cancel the local tokens first (this process's calls end now), then flag the rows and push
        the stop to whichever process runs them (a Celery worker hears it within milliseconds)."""
        for pk in ids:
            token = self._tokens.get(pk)
            if token is not None:
                token.cancel(reason)
        stopped = 0
        roots: dict[int, list[int]] = {}
        for pk in ids:
            stopped += await services.arequest_stop(pk, reason)
            root = await ChatSession.objects.filter(pk=pk).values_list("root_session_id", flat=True).afirst()
            roots.setdefault(root or pk, []).append(pk)
        layer = get_channel_layer()
        if layer is not None:
            for root, sessions in roots.items():
                # A failed push is logged there; the row flag still reaches the turn.
                message = {"type": STOP_MESSAGE, "sessions": sessions, "reason": reason}
                await send_to_group(layer, stop_group(root), message, STOP_MESSAGE)
        return stopped

    def _stop_reason_of(self, root_id: int) -> str | None:
        token = self._tokens.get(root_id)
        return token.reason if token is not None else None

    # ---- plumbing ----------------------------------------------------------------------------

    def _register(self, session_id: int, root_id: int) -> CancelToken:
        async def flagged() -> str | None:
            return await services.astop_requested(session_id) or None

        token = CancelToken(check=flagged)
        self._tokens[session_id] = token
        self._root_of[session_id] = root_id
        return token

    def _forget(self, session_id: int) -> None:
        self._tokens.pop(session_id, None)
        self._root_of.pop(session_id, None)
        if not self._root_of and self._poller is not None:
            self._poller.cancel()  # nothing left to watch; the next turn starts another
            self._poller = None

    def _cancel_local(self, session_ids, reason: str) -> None:
        for pk in session_ids:
            token = self._tokens.get(pk)
            if token is not None and not token.cancelled:
                token.cancel(reason)

    def _watch_stop(self, root_id: int) -> asyncio.Task:
        """Turn stops requested by other processes into local cancellation while this turn runs: a
        pushed channel-layer message (immediate; the returned listener, which the turn `_detach`es
        when it ends), with the rows' flags polled as a fallback by the process's one poller
        (`_poll_flags`), which also keeps the rows' heartbeat fresh."""
        loop = asyncio.get_running_loop()
        if self._poller is None or self._poller.done() or self._poller.get_loop() is not loop:
            self._poller = loop.create_task(self._poll_flags())
        return loop.create_task(self._listen_for_stops(root_id))

    async def _poll_flags(self) -> None:
        """Every STOP_POLL_SECONDS, one query for the stop flags of every agent this process runs
        (not one per turn: 200 concurrent turns made 200 queries a second), and every
        HEARTBEAT_EVERY polls one heartbeat update for them all, so the reaper leaves live rows
        alone. A failed poll (the database is restarting) is logged once and the polling goes on."""
        polls = 0
        failing = False
        while self._root_of:
            await asyncio.sleep(STOP_POLL_SECONDS)
            polls += 1
            ids = list(self._root_of)
            try:
                for pk, reason in await _stop_flagged(ids):
                    self._cancel_local([pk], reason)
                if polls % HEARTBEAT_EVERY == 0:
                    await services.aheartbeat(ids)
            except DatabaseError as exc:
                if not failing:
                    log.warning("cannot read the stop flags of %d running agents: %s", len(ids), exc)
                failing = True
            else:
                failing = False

    def _ids_under(self, root_id: int) -> list[int]:
        return [pk for pk, root in list(self._root_of.items()) if root == root_id]

    async def _cancel_flagged(self, root_id: int) -> None:
        for pk, reason in await _stop_flagged(self._ids_under(root_id)):
            self._cancel_local([pk], reason)

    async def _listen_for_stops(self, root_id: int) -> None:
        """Hear pushed stops on the group `ongrid-stop.<root>`. The channel layer may go away
        under a turn (Redis restarts, forgetting its groups): the listener then rejoins, with a
        growing pause, and keeps its membership fresh meanwhile; the row poll stops the turn
        while the push cannot."""
        layer = get_channel_layer()
        if layer is None:
            return
        group = stop_group(root_id)
        channel: str | None = None
        keeper: asyncio.Task | None = None
        failures = 0
        try:
            while True:
                try:
                    channel = channel or await layer.new_channel()
                    await layer.group_add(group, channel)
                    keeper = keeper or asyncio.create_task(_stay_in_group(layer, group, channel))
                    if failures:
                        log.info("listening for pushed stops of session %s again", root_id)
                    failures = 0
                    await self._cancel_flagged(root_id)  # a stop sent before we (re)joined
                    await self._receive_stops(layer, channel)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # noqa: BLE001 - the row poll still stops the turn
                    failures += 1
                    if failures == 1:
                        log.warning(
                            "lost the stop listener of session %s (%s: %s); rejoining",
                            root_id,
                            type(exc).__name__,
                            exc,
                        )
                    await asyncio.sleep(min(STOP_REJOIN_SECONDS, STOP_POLL_SECONDS * failures))
        finally:
            if keeper is not None:
                keeper.cancel()
            if channel is not None:
                try:
                    await asyncio.shield(layer.group_discard(group, channel))
                except BaseException:  # noqa: BLE001 - cancelled or the layer is down
                    log.debug("could not leave %s", group)

    async def _receive_stops(self, layer, channel: str) -> None:
        while True:
            message = await layer.receive(channel)
            if message.get("type") == STOP_MESSAGE:
                self._cancel_local(message.get("sessions") or [], message.get("reason") or "stopped")

    @staticmethod
    async def _persist(session_id: int, new_messages: list[dict]) -> None:
        """One transaction for the lot, retried: the answer the model already gave is kept
        across a database restart instead of being lost with the turn."""
        await _retrying("the agent's messages", services.aappend_messages, session_id, new_messages)

    def _coordinator_tools(
        self, persona, session, publisher, specialists: list[str], available: dict[str, Tool]
    ) -> list[Tool]:
        control = {t.name: t for t in self._control_tools(session, publisher, specialists)}
        bag = build_toolbag(persona, {**available, **control}, coordinator=True)
        present = {t.name for t in bag}
        bag += [control_tools.stub_tool(stub) for stub in redirects() if stub.name not in present]
        return bag

    def _control_tools(
        self, session: ChatSession, publisher: Publisher, specialists: list[str]
    ) -> list[Tool]:
        return [
            control_tools.agent_tool(self, session, publisher, specialists),
            control_tools.send_message_tool(session, publisher),
            control_tools.task_stop_tool(self, session),
        ]


async def _with_skills(
    persona: Persona, organization_id: int, tools: list[Tool]
) -> tuple[list[Tool], SkillOffer]:
    """The skills `persona` runs with, and its tools plus the `Skill` tool when it is offered any
    (docs/skills.md). A persona that disallows `Skill` keeps its active skills but gets no catalog."""
    offer = await aoffer_for(persona, organization_id)
    if matches_any(SKILL_TOOL.name, persona.disallowed_tools):
        offer = SkillOffer(active=offer.active)
    tool = skill_tool(offer)
    if tool is not None and all(existing.name != tool.name for existing in tools):
        tools = [*tools, tool]
    return tools, offer


async def _worker_model(persona: Persona, parent: ChatSession, provider) -> str:
    """The real model a worker runs on: its persona's alias resolved on the organization's
    endpoint, `inherit` meaning the model of the agent that dispatched it (the parent session's)."""
    caller = (await aget_registry(parent.organization_id)).by_name(parent.agent_id or COORDINATOR)
    caller_model = resolve_model(caller.model if caller else None, provider, None)
    return resolve_model(persona.model, provider, caller_model)


def _recorder_for(provider):
    """The LLM-call recorder, stamping the organization's endpoint (if any) on every row."""
    return functools.partial(record_llm_call, endpoint=getattr(provider, "endpoint", ""))


async def _stay_in_group(layer, group: str, channel: str) -> None:
    """Re-add `channel` to `group` every STOP_REJOIN_SECONDS (idempotent): after a Redis restart
    the group is empty again although the listener's blocking read carried on."""
    while True:
        await asyncio.sleep(STOP_REJOIN_SECONDS)
        try:
            await layer.group_add(group, channel)
        except Exception as exc:  # noqa: BLE001 - the listener's own loop reports outages
            log.debug("could not refresh %s: %s", group, exc)


async def _retrying(what: str, write, *args, **kwargs):
    """Run the database write `write(*args, **kwargs)`, retried after each pause of
    FINAL_WRITE_DELAYS when the database fails; the last failure is raised."""
    for pause in (*FINAL_WRITE_DELAYS, None):
        try:
            return await write(*args, **kwargs)
        except DatabaseError as exc:
            if pause is None:
                log.error("gave up writing %s: %s", what, exc)
                raise
            log.warning("writing %s failed (%s); retrying in %gs", what, exc, pause)
            await asyncio.sleep(pause)
    return None


async def _stop_flagged(ids: list[int]) -> list[tuple[int, str]]:
    if not ids:
        return []
    return [
        (pk, reason or "stopped")
        async for pk, reason in ChatSession.objects.filter(
            pk__in=ids, stop_requested_at__isnull=False
        ).values_list("pk", "stop_reason")
    ]


async def _take_requested(session_id: int) -> RequestedCall | None:
    """The one-click call waiting for this turn, claimed so a redelivered turn never runs it twice."""
    pending = await RequestedCall.objects.filter(session_id=session_id, taken_at__isnull=True).afirst()
    if pending is None:
        return None
    claimed = await RequestedCall.objects.filter(pk=pending.pk, taken_at__isnull=True).aupdate(
        taken_at=timezone.now()
    )
    return pending if claimed else None


def _one_call_messages(call_id: str, tool: str, arguments: str, result: str) -> list[dict]:
    """The worker's history for a call it was handed: the call, then its result."""
    return [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": tool, "arguments": arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": result},
    ]


_DETACHED: set[asyncio.Task] = set()
DETACH_RECANCEL_SECONDS = 1.0


def _detach(task: asyncio.Task) -> None:
    """Cancel `task` without waiting for it to unwind. The stop listener's channels_redis
    `receive` may be the process's one reader in a shielded BRPOP, which ends only at its 5 s
    timeout: awaiting it held the end of a turn that long (bench/README.md, the scale-out tail).
    The task is kept referenced until it is done, so it is not collected mid-cleanup.

    A cancellation can be swallowed on the way (one that lands as channels_redis' read completes
    is lost on Python 3.11), leaving the listener reading for ever: the soak saw one such task per
    worker. So the task is cancelled again every DETACH_RECANCEL_SECONDS until it has ended."""
    _DETACHED.add(task)
    task.add_done_callback(_DETACHED.discard)
    loop = task.get_loop()

    def cancel() -> None:
        if not task.done():
            task.cancel()
            loop.call_later(DETACH_RECANCEL_SECONDS, cancel)

    cancel()


def stop_reason(by: str) -> str:
    """The reason rows close with: "stopped by alice", or plain "stopped" (a caller with no user)."""
    return f"stopped by {by}" if by else "stopped"


def stop_group(root_id: int) -> str:
    """The channel-layer group the process running a turn listens on for pushed stops."""
    return f"ongrid-stop.{root_id}"


def stopped_note(reason: str, cut_off: str) -> str:
    """The line a stopped turn ends with, for the user and for the next turn's coordinator."""
    who = (reason or "stopped").strip()
    text = who[0].upper() + who[1:]
    return f"{text} before the answer was complete. Cut off: {cut_off or 'nothing was running'}."


_runtime: Runtime | None = None


def get_runtime() -> Runtime:
    global _runtime
    if _runtime is None:
        _runtime = Runtime()
    return _runtime
