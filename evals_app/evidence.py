"""What one evaluated turn did, read back from the ordinary records: the session tree, the audit
rows and the LLM-call rows. The grader judges this and nothing else, so a check can only pass on
something a reviewer could also see in the audit pages."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Q

from agents_app.api import TOOL_SEARCH, last_answer
from agents_app.models import MutatingProposal
from audit_app.costs import estimate_cost
from audit_app.models import AuditLog, LLMCall
from chat_app.models import ChatSession

REVIEWER = "reviewer"


@dataclass(frozen=True)
class ToolAttempt:
    tool: str
    tool_class: str
    status: str
    persona: str
    arguments: str = ""
    tool_call_id: str = ""
    session_id: int | None = None


@dataclass(frozen=True)
class ProposedWrite:
    """A write held by the review gate (a `MutatingProposal` of the run) and what became of it."""

    tool: str
    arguments: dict
    decision: str  # pending | approve | reject
    executed: bool = False  # it ran and succeeded
    tool_call_id: str = ""
    session_id: int | None = None  # with tool_call_id, the call's audit row (ids repeat across sessions)


@dataclass(frozen=True)
class Evidence:
    root_session_id: int | None
    answer: str
    error: str = ""
    dispatched: tuple[str, ...] = ()  # personas of the worker sessions (reviewers excluded)
    attempts: tuple[ToolAttempt, ...] = ()
    proposals: tuple[ProposedWrite, ...] = ()
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    models: tuple[str, ...] = ()
    session_ids: tuple[int, ...] = field(default=())
    reports: tuple[str, ...] = ()  # the workers' final answers (reviewers excluded): their reports

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def investigation(self) -> tuple[ToolAttempt, ...]:
        """The agents' own calls; the reviewer's reads belong to the gate, not the budget, and
        ToolSearch only loads schemas (docs/kernel.md)."""
        return tuple(a for a in self.attempts if a.persona != REVIEWER and a.tool != TOOL_SEARCH.name)


def collect(root_session_id: int) -> Evidence:
    """Read the tree under `root_session_id` (sync: call it in a thread from async code)."""
    root = ChatSession.objects.get(pk=root_session_id)
    sessions = list(
        ChatSession.objects.filter(Q(pk=root_session_id) | Q(root_session_id=root_session_id)).order_by("pk")
    )
    ids = [s.pk for s in sessions]
    attempts = tuple(
        ToolAttempt(
            row.tool, row.tool_class, row.status, row.persona, row.arguments, row.tool_call_id, row.session_id
        )
        for row in AuditLog.objects.filter(session_id__in=ids).order_by("started_at", "pk")
    )
    proposed = tuple(
        ProposedWrite(
            p.tool, p.arguments or {}, p.decision, p.executed_at is not None, p.tool_call_id, p.session_id
        )
        for p in MutatingProposal.objects.filter(session_id__in=ids).order_by("created_at", "pk")
    )
    usage: dict[str, dict[str, int]] = {}
    prompt = completion = 0
    for call in LLMCall.objects.filter(session_id__in=ids):
        prompt += call.prompt_tokens
        completion += call.completion_tokens
        used = usage.setdefault(call.model, {"prompt": 0, "completion": 0})
        used["prompt"] += call.prompt_tokens
        used["completion"] += call.completion_tokens
    answer = last_answer(root_session_id)
    workers = [s.pk for s in sessions if s.pk != root_session_id and s.agent_id != REVIEWER]
    reports = tuple(m.content for m in (last_answer(pk) for pk in workers) if m is not None and m.content)
    return Evidence(
        root_session_id=root_session_id,
        answer=answer.content if answer is not None else "",
        error=root.error,
        dispatched=tuple(s.agent_id for s in sessions if s.pk != root_session_id and s.agent_id != REVIEWER),
        attempts=attempts,
        proposals=proposed,
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=estimate_cost(usage)["usd"] if usage else 0.0,
        models=tuple(sorted(usage)),
        session_ids=tuple(ids),
        reports=reports,
    )
