"""The one session tree: who did what, under whom. Every surface that shows a tree gets it here:
the chat API's `/tree/`, the audit page, the audit API and export, and the chat transcript.

The tree is coordinator → workers (by `parent_session`) → reviewer sessions, which hang under the
tool call they gated (their `spawned_by_call` is that call's id) in the call's `reviews`. Each node
carries a timeline of its messages (optional) and tool calls, and the proposals it raised. The whole
tree costs a fixed number of queries (sessions, messages, calls, LLM usage, proposals) however many
workers and calls it has.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q

from agents_app.api import AGENT_TOOL, describe_proposal
from agents_app.models import MutatingProposal
from audit_app.models import AuditLog, LLMCall
from audit_app.queries import (
    distinct_traces,
    llm_usage_by_session,
    merge_endpoint_usage,
    model_call_entry,
    session_summary,
    trace_link,
    usage_from_calls,
)
from chat_app.models import ChatMessage, ChatSession, HistorySummary, MessageRole

SPAWN_TOOL = AGENT_TOOL.name  # its spawned session is a worker (a child node), not a review
SPAWN_SLACK = timedelta(milliseconds=500)  # a worker row is written while its dispatch runs
SPAWNED_STATUSES = {"ok", "killed"}  # a dispatch that ended so ran a worker


def root_of(session: ChatSession) -> int:
    return session.root_session_id or session.pk


@dataclass
class _Rows:
    """The rows one tree is assembled from, fetched with a fixed number of queries."""

    sessions: list[ChatSession]
    calls: list[AuditLog]
    messages: list[ChatMessage]
    usage: dict
    proposals: list[MutatingProposal]
    model_calls: list[LLMCall]


def _load(root_id: int, *, messages: str, since: datetime | None) -> _Rows:
    sessions = ChatSession.objects.filter(Q(pk=root_id) | Q(root_session_id=root_id))
    if since is not None:
        sessions = sessions.filter(Q(pk=root_id) | Q(created_at__gte=since))
    rows = list(sessions.select_related("user").order_by("created_at", "pk"))
    ids = [row.pk for row in rows]
    calls = AuditLog.objects.filter(session_id__in=ids)
    said = ChatMessage.objects.filter(session_id__in=ids if messages == "all" else [root_id])
    held = MutatingProposal.objects.filter(root_session_id=root_id)
    if since is not None:
        calls = calls.filter(started_at__gte=since)
        said = said.filter(created_at__gte=since)
        held = held.filter(created_at__gte=since)
    # All of them for the token totals (as before); the per-call list keeps `since`.
    asked = list(LLMCall.objects.filter(session_id__in=ids).order_by("started_at", "pk"))
    model_calls = [a for a in asked if since is None or a.started_at >= since]
    return _Rows(
        rows,
        list(calls.order_by("started_at", "pk")),
        list(said.order_by("session_id", "seq")) if messages != "none" else [],
        usage_from_calls(asked),
        list(held.select_related("human_approver").order_by("created_at", "pk")),
        model_calls,
    )


def build_tree(session: ChatSession, *, messages: str = "all", since: datetime | None = None) -> dict:
    """The whole tree `session` belongs to, rooted at its coordinator.

    `messages`: "all" (auditors), "root" (the coordinator's only: a chat's owner never sees a
    worker's raw transcript) or "none". `since` keeps only what happened from then on (the chat
    page redraws the last turn with it).
    """
    root_id = root_of(session)
    return _Assembler(_load(root_id, messages=messages, since=since)).node(root_id)


class _Assembler:
    def __init__(self, rows: _Rows) -> None:
        self.rows = {row.pk: row for row in rows.sessions}
        self.usage = rows.usage
        self.calls = defaultdict(list)
        for call in rows.calls:
            self.calls[call.session_id].append(call)
        self.messages = defaultdict(list)
        for message in rows.messages:
            self.messages[message.session_id].append(message)
        self.model_calls = defaultdict(list)
        for asked in rows.model_calls:
            self.model_calls[asked.session_id].append(model_call_entry(asked))
        self.proposals = defaultdict(list)
        self.proposal_of_call = {}
        for proposal in rows.proposals:
            described = describe_proposal(proposal)
            self.proposals[proposal.session_id].append(described)
            self.proposal_of_call[(proposal.session_id, proposal.tool_call_id)] = described
        self.children = defaultdict(list)
        self.reviews = defaultdict(list)  # (session id, tool_call_id) of the gated call -> sessions
        gated = {
            (c.session_id, c.tool_call_id) for c in rows.calls if c.tool_call_id and c.tool != SPAWN_TOOL
        }
        by_id = defaultdict(list)
        for key in gated:
            by_id[key[1]].append(key)
        for row in rows.sessions:
            key = self.gated_call_of(row, gated, by_id)
            if key is not None:
                self.reviews[key].append(row)
            elif row.parent_session_id in self.rows:
                self.children[row.parent_session_id].append(row)

    @staticmethod
    def gated_call_of(row: ChatSession, gated: set, by_id: dict) -> tuple | None:
        """The gated call a reviewer session judged: a call of its parent, else the only call of that id."""
        if not row.spawned_by_call or row.agent_id != "reviewer":
            return None
        key = (row.parent_session_id, row.spawned_by_call)
        if key in gated:
            return key
        candidates = by_id.get(row.spawned_by_call, [])
        return candidates[0] if len(candidates) == 1 else None

    def node(self, session_id: int) -> dict:
        row = self.rows[session_id]
        summary = session_summary(row, len(self.calls[session_id]), self.usage.get(session_id))
        summary["usage"] = row.usage
        summary["result"] = row.result
        summary["error"] = row.error
        summary["proposals"] = self.proposals[session_id]
        summary["timeline"] = self.timeline(row)
        summary["model_calls"] = self.model_calls[session_id]
        summary["traces"] = distinct_traces(self.model_calls[session_id])
        summary["children"] = [self.node(child.pk) for child in self.children[session_id]]
        return summary

    def timeline(self, row: ChatSession) -> list[dict]:
        calls = self.calls[row.pk]
        answered = {call.tool_call_id for call in calls if call.tool_call_id}
        worker_of = pair_dispatches(calls, self.children[row.pk])
        entries = [
            message_entry(m)
            for m in self.messages[row.pk]
            if not (m.role == MessageRole.TOOL and m.tool_call_id in answered)  # the call card shows it
        ]
        for call in calls:
            entry = call_entry(call, self.proposal_of_call.get((call.session_id, call.tool_call_id)))
            entry["worker"] = worker_of.get(call.pk)
            entry["reviews"] = [self.node(review.pk) for review in self.reviews[(row.pk, call.tool_call_id)]]
            entries.append(entry)
        entries.sort(key=lambda entry: entry["at"])
        return entries


def pair_dispatches(calls: list[AuditLog], children: list[ChatSession]) -> dict[int, int]:
    """Audit row id of each dispatch -> the worker it spawned.

    Keyed by the audit row, never by the model's call id alone: a model may reuse one id for every
    dispatch (the offline model's `offline_dispatch` does), and a refused or deduplicated dispatch
    spawns nothing. First, each AgentTool row takes the earliest unclaimed worker of its id created
    while the call ran (start to end, with a little slack); then a dispatch that succeeded and is
    still unpaired takes the earliest unclaimed one created after it started. No worker is given
    to two rows."""
    waiting: dict[str, list[ChatSession]] = defaultdict(list)
    for child in sorted(children, key=lambda c: (c.created_at, c.pk)):
        if child.spawned_by_call:
            waiting[child.spawned_by_call].append(child)
    dispatches = sorted((c for c in calls if c.tool == SPAWN_TOOL), key=lambda c: (c.started_at, c.pk))
    paired: dict[int, int] = {}

    def take(call: AuditLog, fits) -> None:
        candidates = waiting.get(call.tool_call_id or "", [])
        chosen = next((c for c in candidates if fits(call, c)), None)
        if chosen is not None:
            candidates.remove(chosen)
            paired[call.pk] = chosen.pk

    def during(call: AuditLog, child: ChatSession) -> bool:
        ends = call.started_at + timedelta(milliseconds=call.duration_ms or 0) + SPAWN_SLACK
        return call.started_at - SPAWN_SLACK <= child.created_at <= ends

    for call in dispatches:
        take(call, during)
    for call in dispatches:
        if call.pk not in paired and call.status in SPAWNED_STATUSES:
            take(call, lambda call, child: child.created_at >= call.started_at - SPAWN_SLACK)
    return paired


def message_entry(message: ChatMessage) -> dict:
    return {
        "type": "message",
        "at": message.created_at,
        "id": message.pk,
        "seq": message.seq,
        "role": message.role,
        "kind": message.kind,
        "content": message.content,
        "content_pretty": pretty_json(message.content) if message.role == MessageRole.TOOL else None,
        "tool_calls": message.tool_calls,
        "tool_call_id": message.tool_call_id,
        "tokens": message.tokens,
    }


def call_entry(call: AuditLog, proposal: dict | None = None) -> dict:
    """A tool call as the audit trail recorded it: arguments exactly as the LLM sent them."""
    return {
        "type": "call",
        "at": call.started_at,
        "id": call.pk,
        "session": call.session_id,
        "persona": call.persona,
        "tool_call_id": call.tool_call_id,
        "tool": call.tool,
        "tool_class": call.tool_class,
        "status": call.status,
        "arguments": call.arguments,
        "arguments_pretty": pretty_json(call.arguments),
        "result": call.result,
        "result_pretty": pretty_json(call.result),
        "result_size": call.result_size,
        "truncated": call.truncated,
        "error": call.error,
        "started_at": call.started_at,
        "duration_ms": call.duration_ms,
        "proposal": proposal,
        "trace": trace_link(call.trace_id),
    }


def pretty_json(text: str) -> str | None:
    """An indented copy for reading; None when the LLM sent something that is not JSON."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


def call_detail(call: AuditLog) -> dict:
    """One call with its proposal and the reviewer sessions that judged it."""
    proposal = None
    if call.tool_call_id and call.session_id:
        held = (
            MutatingProposal.objects.filter(session_id=call.session_id, tool_call_id=call.tool_call_id)
            .select_related("human_approver")
            .first()
        )
        proposal = describe_proposal(held) if held else None
    entry = call_entry(call, proposal)
    reviewers = []
    if call.tool_call_id and call.session is not None and call.tool != SPAWN_TOOL:
        root_id = root_of(call.session)
        candidates = list(
            ChatSession.objects.filter(Q(pk=root_id) | Q(root_session_id=root_id))
            .filter(spawned_by_call=call.tool_call_id, agent_id="reviewer")
            .select_related("user")
            .order_by("created_at")
        )
        reviewers = [r for r in candidates if r.parent_session_id == call.session_id] or candidates
    usage = llm_usage_by_session([r.pk for r in reviewers])
    entry["reviews"] = [
        dict(session_summary(r, 0, usage.get(r.pk)), result=r.result, error=r.error) for r in reviewers
    ]
    return entry


def history_summaries(root_id: int):
    """What the model was told instead of a long chat's earlier turns (docs/chat.md, "Long chats"),
    oldest first: the audit pages and the API show them beside the turns they stand for."""
    return HistorySummary.objects.filter(session_id=root_id).order_by("through_seq")


def tree_document(tree: dict) -> dict:
    """The audit API's body for a tree: its totals, the tree and the chat's history summaries."""
    summaries = [
        {
            "through_seq": row.through_seq,
            "messages": row.messages,
            "model": row.model,
            "created_at": row.created_at.isoformat(),
            "text": row.text,
        }
        for row in history_summaries(tree["id"])
    ]
    return {"totals": tree_totals(tree), "tree": tree, "history_summaries": summaries}


def tree_totals(node: dict) -> dict:
    """Tokens and cost summed over a whole tree (reviews included), in all and per LLM endpoint."""
    prompt = completion = 0
    usd = 0.0
    unpriced: set[str] = set()
    endpoints: list[dict] = []
    for each in walk(node):
        endpoints += each["endpoints"]
        prompt += each["tokens"]["prompt"]
        completion += each["tokens"]["completion"]
        usd += each["cost"]["usd"] or 0.0
        unpriced.update(each["cost"]["unpriced"])
    return {
        "tokens": {"prompt": prompt, "completion": completion, "total": prompt + completion},
        "cost": {"usd": round(usd, 6), "unpriced": sorted(unpriced)},
        "endpoints": merge_endpoint_usage(endpoints),
    }


def walk(node: dict):
    """Every node of a tree: workers and, under the calls they gated, reviewers."""
    yield node
    for child in node["children"]:
        yield from walk(child)
    for entry in node["timeline"]:
        for review in entry.get("reviews", ()):
            yield from walk(review)
