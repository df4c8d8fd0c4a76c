"""One session tree for the audit page, the API and the export: who did what, under whom.

The tree is coordinator → workers (by `parent_session`) → reviewer sessions, which hang under the
tool call they gated (their `spawned_by_call` is that call's id). Each node carries a timeline of
its messages and tool calls. The whole tree costs a fixed number of queries (sessions, messages,
calls, LLM usage, proposals) however many workers and calls it has.
"""

from __future__ import annotations

import json
from collections import defaultdict

from django.apps import apps
from django.db.models import Model, Q

from audit_app.models import AuditLog
from audit_app.queries import llm_usage_by_session, session_summary
from chat_app.models import ChatMessage, ChatSession, MessageRole

SPAWN_TOOL = "AgentTool"  # its spawned session is a worker (a child node), not a review


def proposal_model() -> type[Model] | None:
    """The review gate's proposal model, when the gate is installed (it lives in agents_app)."""
    try:
        return apps.get_model("agents_app", "MutatingProposal")
    except LookupError:
        return None


def root_of(session: ChatSession) -> int:
    return session.root_session_id or session.pk


def build_tree(session: ChatSession) -> dict:
    """The whole tree `session` belongs to, rooted at its coordinator."""
    root_id = root_of(session)
    rows = list(
        ChatSession.objects.filter(Q(pk=root_id) | Q(root_session_id=root_id))
        .select_related("user")
        .order_by("created_at", "pk")
    )
    ids = [row.pk for row in rows]
    calls = list(AuditLog.objects.filter(session_id__in=ids).order_by("started_at", "pk"))
    messages = list(ChatMessage.objects.filter(session_id__in=ids).order_by("session_id", "seq"))
    usage = llm_usage_by_session(ids)
    proposals = proposals_by_call(calls)
    return _Assembler(rows, calls, messages, usage, proposals).node(root_id)


class _Assembler:
    def __init__(self, rows, calls, messages, usage, proposals) -> None:
        self.rows = {row.pk: row for row in rows}
        self.usage = usage
        self.proposals = proposals
        self.calls = defaultdict(list)
        for call in calls:
            self.calls[call.session_id].append(call)
        self.messages = defaultdict(list)
        for message in messages:
            self.messages[message.session_id].append(message)
        self.children = defaultdict(list)
        self.reviews = defaultdict(list)  # (session id, tool_call_id) of the gated call -> sessions
        gated = {(c.session_id, c.tool_call_id) for c in calls if c.tool_call_id and c.tool != SPAWN_TOOL}
        by_id = defaultdict(list)
        for key in gated:
            by_id[key[1]].append(key)
        for row in rows:
            key = self.gated_call_of(row, gated, by_id)
            if key is not None:
                self.reviews[key].append(row)
            elif row.parent_session_id in self.rows:
                self.children[row.parent_session_id].append(row)

    @staticmethod
    def gated_call_of(row: ChatSession, gated: set, by_id: dict) -> tuple | None:
        """The gated call a reviewer session judged: a call of its parent, else the only call of that id."""
        if not row.spawned_by_call:
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
        summary["timeline"] = self.timeline(row)
        summary["children"] = [self.node(child.pk) for child in self.children[session_id]]
        return summary

    def timeline(self, row: ChatSession) -> list[dict]:
        calls = self.calls[row.pk]
        answered = {call.tool_call_id for call in calls if call.tool_call_id}
        spawned = {c.spawned_by_call: c.pk for c in self.children[row.pk] if c.spawned_by_call}
        entries = [
            message_entry(m)
            for m in self.messages[row.pk]
            if not (m.role == MessageRole.TOOL and m.tool_call_id in answered)  # the call card shows it
        ]
        for call in calls:
            entry = call_entry(call, self.proposals.get((call.session_id, call.tool_call_id)))
            entry["worker"] = spawned.get(call.tool_call_id) if call.tool == SPAWN_TOOL else None
            entry["reviews"] = [self.node(review.pk) for review in self.reviews[(row.pk, call.tool_call_id)]]
            entries.append(entry)
        entries.sort(key=lambda entry: entry["at"])
        return entries


def message_entry(message: ChatMessage) -> dict:
    return {
        "type": "message",
        "at": message.created_at,
        "seq": message.seq,
        "role": message.role,
        "kind": message.kind,
        "content": message.content,
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
        "result_size": call.result_size,
        "truncated": call.truncated,
        "error": call.error,
        "started_at": call.started_at,
        "duration_ms": call.duration_ms,
        "proposal": proposal,
    }


def pretty_json(text: str) -> str | None:
    """An indented copy for reading; None when the LLM sent something that is not JSON."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (TypeError, ValueError):
        return None


def proposals_by_call(calls: list[AuditLog]) -> dict[tuple[int | None, str], dict]:
    """The gate's proposals for these calls, keyed like the calls: (session id, tool_call_id)."""
    model = proposal_model()
    call_ids = {call.tool_call_id for call in calls if call.tool_call_id}
    if model is None or not call_ids:
        return {}
    fields = {field.name for field in model._meta.concrete_fields}
    if "tool_call_id" not in fields:
        return {}
    rows = model._default_manager.filter(tool_call_id__in=call_ids)
    if "organization" in fields:
        rows = rows.filter(organization_id__in={call.organization_id for call in calls})
    relations = [f.name for f in model._meta.concrete_fields if f.many_to_one]
    sessions = {call.tool_call_id: call.session_id for call in calls}
    found = {}
    for proposal in rows.select_related(*relations):
        described = describe_proposal(proposal)
        session = getattr(proposal, "session_id", None) or sessions.get(proposal.tool_call_id)
        found[(session, proposal.tool_call_id)] = described
    return found


def describe_proposal(proposal: Model) -> dict:
    """Every stored field of a proposal; links as {id, label} so a page can name the approver."""
    described = {}
    for field in proposal._meta.concrete_fields:
        if field.many_to_one:
            related = getattr(proposal, field.name)
            described[field.name] = None if related is None else {"id": related.pk, "label": str(related)}
        else:
            described[field.name] = field.value_from_object(proposal)
    return described


def call_detail(call: AuditLog) -> dict:
    """One call with its proposal and the reviewer sessions that judged it."""
    proposal = proposals_by_call([call]).get((call.session_id, call.tool_call_id))
    entry = call_entry(call, proposal)
    reviewers = []
    if call.tool_call_id and call.session is not None and call.tool != SPAWN_TOOL:
        root_id = root_of(call.session)
        candidates = list(
            ChatSession.objects.filter(Q(pk=root_id) | Q(root_session_id=root_id))
            .filter(spawned_by_call=call.tool_call_id)
            .select_related("user")
            .order_by("created_at")
        )
        reviewers = [r for r in candidates if r.parent_session_id == call.session_id] or candidates
    usage = llm_usage_by_session([r.pk for r in reviewers])
    entry["reviews"] = [
        dict(session_summary(r, 0, usage.get(r.pk)), result=r.result, error=r.error) for r in reviewers
    ]
    return entry


def tree_totals(node: dict) -> dict:
    """Tokens and cost summed over a whole tree (reviews included)."""
    prompt = completion = 0
    usd = 0.0
    unpriced: set[str] = set()
    for each in walk(node):
        prompt += each["tokens"]["prompt"]
        completion += each["tokens"]["completion"]
        usd += each["cost"]["usd"] or 0.0
        unpriced.update(each["cost"]["unpriced"])
    return {
        "tokens": {"prompt": prompt, "completion": completion, "total": prompt + completion},
        "cost": {"usd": round(usd, 6), "unpriced": sorted(unpriced)},
    }


def walk(node: dict):
    yield node
    for child in node["children"]:
        yield from walk(child)
    for entry in node["timeline"]:
        for review in entry.get("reviews", ()):
            yield from walk(review)
