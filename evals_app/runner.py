"""Running scenarios: one ordinary chat turn per scenario, in its own throwaway organization.

For each run the runner creates the scenario's organization and estate, registers the scenario's
recordings for that organization (`agents_app/tools/replay.py`; not in a live run, whose tools reach the
real back ends), asks the question through the runtime exactly as the chat page would (the review
gate, budgets and audit included), reads back what happened and grades it. The recordings are
unregistered when the turn ends and the organization is removed afterwards, unless `keep` asks to
leave it for browsing in the audit pages.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model

from agents_app.api import (
    Replay,
    backend_of,
    control_tools,
    get_runtime,
    load_builtin_tools,
    redirects,
    replaying,
)
from chat_app import services
from chat_app.models import Channel
from evals_app.entities import agrees_with_judge, score_entities
from evals_app.estate import Sandbox, create_sandbox, entity_names, remove_sandbox
from evals_app.evidence import Evidence, collect
from evals_app.grading import Check, grade
from evals_app.judge import judge
from evals_app.scenarios import Scenario


def replayed_tools() -> frozenset[str]:
    """The built-in tools answered from the recordings: those of toolsets reaching outside Ongrid
    (telemetry, host commands, Alertmanager silences, an incident silenced in its paging tool).
    Tools over the estate loaded into the organization (its incidents, devices, knowledge) run
    for real."""
    return frozenset(name for name in load_builtin_tools() if backend_of(name) != "ongrid")


def known_tools() -> set[str]:
    return set(load_builtin_tools()) | set(control_tools()) | {stub.name for stub in redirects()}


@dataclass
class RunResult:
    """One run of one scenario, as the reports print and store it."""

    scenario: str
    category: str
    difficulty: str
    tags: list[str]
    attempt: int
    passed: bool
    score: float
    checks: list[Check]
    tool_calls: int = 0
    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cost_usd: float | None = None
    answer: str = ""
    dispatched: list[str] = field(default_factory=list)
    tools_used: list[str] = field(default_factory=list)
    session_ids: list[int] = field(default_factory=list)
    organization: str = ""
    judge: dict | None = None
    entities: dict | None = None  # the investigator's F1 (evals_app/entities.py); None: not scored
    judge_agrees: bool | None = None  # the judge's verdict matches the entity extraction's
    error: str = ""

    @property
    def failed_checks(self) -> list[str]:
        return [c.name for c in self.checks if not c.passed]

    def as_dict(self) -> dict:
        return {
            "scenario": self.scenario,
            "category": self.category,
            "difficulty": self.difficulty,
            "tags": self.tags,
            "attempt": self.attempt,
            "passed": self.passed,
            "score": self.score,
            "checks": [c.as_dict() for c in self.checks],
            "failed_checks": self.failed_checks,
            "tool_calls": self.tool_calls,
            "tokens": self.tokens,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": self.latency_s,
            "cost_usd": self.cost_usd,
            "answer": self.answer,
            "dispatched": self.dispatched,
            "tools_used": self.tools_used,
            "session_ids": self.session_ids,
            "organization": self.organization,
            "judge": self.judge,
            "entities": self.entities,
            "judge_agrees": self.judge_agrees,
            "error": self.error,
        }


@dataclass(frozen=True)
class RunOptions:
    repeat: int = 1
    parallel: int = 1
    keep: bool = False  # leave each organization (and its sessions) in place for the audit pages
    judge_provider: object | None = None  # an OpenAIProvider for the judge, or None: no judge
    live: bool = False  # no recordings: the tools reach the real back ends (docs/evals.md, "Live runs")


def question_of(scenario: Scenario, sandbox: Sandbox) -> str:
    """The question, with `{incident_id}` standing for the first incident the estate loaded."""
    incident = sandbox.incident_ids[0] if sandbox.incident_ids else ""
    return scenario.question.replace("{incident_id}", str(incident))


async def _ask(sandbox: Sandbox, scenario: Scenario) -> int:
    user = await get_user_model().objects.aget(pk=sandbox.user_id)
    chat = await sync_to_async(services.start_chat)(user, channel=Channel.CLI, title=f"eval: {scenario.name}")
    if scenario.conversation:  # the earlier turns, as the chat's transcript holds them
        earlier = [
            {"role": role, "content": content}
            for question, answer in scenario.conversation
            for role, content in (("user", question), ("assistant", answer))
        ]
        await services.aappend_messages(chat.pk, earlier)
    await services.abegin_turn(chat.pk, question_of(scenario, sandbox))
    await get_runtime().run_turn(chat.pk)
    return chat.pk


def score_of(checks: list[Check], verdict: dict | None) -> tuple[bool, float]:
    judged = verdict is not None and verdict["verdict"] in ("pass", "fail")  # "error": no verdict
    outcomes = [c.passed for c in checks] + ([verdict["verdict"] == "pass"] if judged else [])
    if not outcomes:
        return False, 0.0
    return all(outcomes), round(sum(outcomes) / len(outcomes), 3)


async def run_scenario(scenario: Scenario, attempt: int, options: RunOptions) -> RunResult:
    """Create, ask, grade, clean up. A crash anywhere becomes a failed result, never an abort."""
    result = RunResult(
        scenario.name, scenario.category, scenario.difficulty, list(scenario.tags), attempt, False, 0.0, []
    )
    sandbox = await sync_to_async(create_sandbox)(scenario.name, scenario.estate)
    result.organization = sandbox.organization_slug
    clock = time.monotonic()
    try:
        if options.live:
            session_id = await _ask(sandbox, scenario)
        else:
            replay = Replay(scenario.recordings, replayed_tools(), scenario.name)
            with replaying(sandbox.organization_id, replay):
                session_id = await _ask(sandbox, scenario)
        result.latency_s = round(time.monotonic() - clock, 3)
        evidence: Evidence = await sync_to_async(collect)(session_id)
        result.checks = grade(scenario, evidence, known_tools())
        if options.judge_provider is not None and scenario.expected.root_cause:
            result.judge = (await judge(scenario, evidence.answer, options.judge_provider)).as_dict()
        result.passed, result.score = score_of(result.checks, result.judge)
        if scenario.expected.entities is not None:
            entities = score_entities(
                scenario.expected.entities.all,
                [*evidence.reports, evidence.answer],
                entity_names(scenario.estate),
            )
            result.entities = entities.as_dict()
            result.judge_agrees = agrees_with_judge(
                entities, scenario.expected.entities.patient_zero, result.judge
            )
        result.tool_calls = len(evidence.investigation)
        result.tokens = evidence.tokens
        result.prompt_tokens = evidence.prompt_tokens
        result.completion_tokens = evidence.completion_tokens
        result.cost_usd = evidence.cost_usd
        result.answer = evidence.answer
        result.dispatched = list(evidence.dispatched)
        result.tools_used = [a.tool for a in evidence.attempts]
        result.session_ids = list(evidence.session_ids)
        result.error = evidence.error
    except Exception as error:  # noqa: BLE001 - one broken scenario must not stop the suite
        result.latency_s = round(time.monotonic() - clock, 3)
        result.error = f"{type(error).__name__}: {error}"
        result.checks = [Check("answered", False, result.error)]
    finally:
        if not options.keep:
            await sync_to_async(remove_sandbox)(sandbox)
    return result


Progress = Callable[[RunResult, int, int], Awaitable[None] | None]


async def run_suite(
    scenarios: list[Scenario], options: RunOptions, progress: Progress | None = None
) -> list[RunResult]:
    """Every scenario `repeat` times, at most `parallel` at once; results in a stable order."""
    jobs = [(scenario, attempt) for scenario in scenarios for attempt in range(1, options.repeat + 1)]
    gate = asyncio.Semaphore(max(1, options.parallel))
    done = 0

    async def one(scenario: Scenario, attempt: int) -> RunResult:
        nonlocal done
        async with gate:
            result = await run_scenario(scenario, attempt, options)
        done += 1
        if progress is not None:
            shown = progress(result, done, len(jobs))
            if asyncio.iscoroutine(shown):
                await shown
        return result

    return list(await asyncio.gather(*(one(s, a) for s, a in jobs)))
