"""Ongrid's own overhead per LLM step, per tool call, and per multi-agent turn.

The LLM is the fake OpenAI-compatible server answering instantly (through the real SDK) and the
only tool is a no-op, so what is measured is the runtime: prompt building, the kernel, the
invoke chain (audit rows, metrics), session rows, event publishing.

    .venv/bin/python bench/turn_overhead.py [--turns 50] [--repeat 10]
    .venv/bin/python bench/turn_overhead.py --steps-only   # one JSON line (bench/compare.py)

Uses a throwaway SQLite database (set DATABASE_URL to measure another engine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ongrid_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("ONGRID_DATA_DIR", tempfile.mkdtemp(prefix="ongrid-bench-"))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402

from fakes.llm_routing import agent_of, tool_messages  # noqa: E402
from fakes.openai_server import FakeLLM, call, text, tool_calls  # noqa: E402
from ops_app.core.egress import AllowList  # noqa: E402

WORKERS, TOOL_CALLS = 3, 5
TOOL_TIME: list[float] = []


def router(request):
    agent, done = agent_of(request), len(tool_messages(request))
    if agent == "default":
        if done:
            return text("woven answer")
        briefs = [f"On web-0{i} inspect the disk, step by step." for i in range(1, WORKERS + 1)]
        return tool_calls(
            *(
                call("AgentTool", {"description": b[:20], "subagent_type": "specialist-disk", "prompt": b})
                for b in briefs
            )
        )
    if done < TOOL_CALLS:
        return tool_calls(call("query_promql", {"query": "up"}))
    return text("worker answer")


async def noop_tool(ctx, **arguments):
    started = time.perf_counter()
    result = {"status": "success", "series": []}
    TOOL_TIME.append(time.perf_counter() - started)
    return result


def tools():
    from agents_app.toolsets.contract import Tool

    return {"query_promql": Tool("query_promql", "no-op for the benchmark", {"type": "object"}, noop_tool)}


class TimedProvider:
    """Wraps the real provider to add up the time spent inside the LLM client."""

    def __init__(self, inner, bucket):
        self.inner, self.bucket, self.name = inner, bucket, inner.name

    def default_model(self):
        return self.inner.default_model()

    async def stream_chat(self, *args, **kwargs):
        started = time.perf_counter()
        async for event in self.inner.stream_chat(*args, **kwargs):
            yield event
        self.bucket.append(time.perf_counter() - started)


def pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def show(label, seconds):
    ms = [s * 1000 for s in seconds]
    print(f"{label:<48} median {statistics.median(ms):8.2f} ms   p95 {pct(ms, 0.95):8.2f} ms   n={len(ms)}")


async def one_agent_run(org, user, llm_time):
    """A single worker doing TOOL_CALLS sequential steps: the per-step and per-call overhead."""
    from agents_app.kernel.events import NullSink
    from agents_app.kernel.loop import run_agent
    from agents_app.llm import get_provider
    from agents_app.personas.registry import aget_registry
    from agents_app.tools.cancel import CancelToken
    from agents_app.toolsets.contract import ToolContext
    from chat_app import services

    chat = await asyncio.to_thread(services.start_chat, user)
    persona = (await aget_registry(org.pk)).by_name("specialist-disk")
    TOOL_TIME.clear()
    llm_time.clear()
    started = time.perf_counter()
    result = await run_agent(
        persona=persona,
        messages=[{"role": "user", "content": "inspect"}],
        tools=list(tools().values()),
        ctx=ToolContext(organization_id=org.pk, session_id=chat.pk, persona_name=persona.name),
        provider=TimedProvider(get_provider(), llm_time),
        sink=NullSink(),
        cancel=CancelToken(),
    )
    wall = time.perf_counter() - started
    assert result.status == "completed", result
    steps = len(llm_time)
    return (wall - sum(llm_time) - sum(TOOL_TIME)) / steps, sum(llm_time) / steps


async def coordinator_turn(user):
    from agents_app.runtime.core import Runtime
    from chat_app import services

    chat = await asyncio.to_thread(services.start_chat, user)
    await asyncio.to_thread(services.begin_turn, chat.pk, "inspect the three web hosts")
    started = time.perf_counter()
    result = await Runtime().run_turn(chat.pk)
    assert result is not None and result.status == "completed", result
    return time.perf_counter() - started


async def steps_only(repeat: int) -> None:
    """The per-step overhead alone, as one JSON line."""
    from ops_app.tenancy import roles
    from ops_app.tenancy.accounts import create_organization, create_user

    stamp = time.time_ns()
    org = await asyncio.to_thread(create_organization, f"Bench {stamp}", f"bench-{stamp}")
    user = await asyncio.to_thread(create_user, f"bench{stamp}", "bench-pass-123", org, roles.MEMBER)
    llm_time: list[float] = []
    await one_agent_run(org, user, llm_time)  # warm-up: connections, registry, prompt caches
    overheads = [(await one_agent_run(org, user, llm_time))[0] for _ in range(repeat)]
    print(
        json.dumps(
            {"step_median": statistics.median(overheads), "step_p95": pct(overheads, 0.95), "n": repeat}
        )
    )


async def main(turns: int, repeat: int) -> None:
    from agents_app.runtime import dedupe
    from ops_app.tenancy import roles
    from ops_app.tenancy.accounts import create_organization, create_user

    stamp = time.time_ns()
    org = await asyncio.to_thread(create_organization, f"Bench {stamp}", f"bench-{stamp}")
    user = await asyncio.to_thread(create_user, f"bench{stamp}", "bench-pass-123", org, roles.MEMBER)
    llm_time: list[float] = []
    step_overhead, llm_step = [], []
    for _ in range(repeat):
        overhead, llm = await one_agent_run(org, user, llm_time)
        step_overhead.append(overhead)
        llm_step.append(llm)
    print(f"engine: {settings.DATABASES['default']['ENGINE']}")
    show("LLM step via SDK + fake server (for scale)", llm_step)
    show("runtime overhead per step (excl. LLM and tool)", step_overhead)
    show(
        "  of which per tool call (invoke chain + audit)",
        [o * (TOOL_CALLS + 1) / TOOL_CALLS for o in step_overhead],
    )

    single = []
    for _ in range(repeat):
        dedupe.DISPATCHES = dedupe.DispatchCache()
        single.append(await coordinator_turn(user))
    show(f"one turn: coordinator + {WORKERS} workers x {TOOL_CALLS} calls", single)

    dedupe.DISPATCHES = dedupe.DispatchCache()
    started = time.perf_counter()
    concurrent = await asyncio.gather(*(coordinator_turn(user) for _ in range(turns)))
    total = time.perf_counter() - started
    show(f"{turns} such turns concurrently (each turn)", concurrent)
    print(f"{turns} concurrent turns: {total:.2f} s wall, {turns / total:.1f} turns/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--steps-only", action="store_true")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    fake = FakeLLM().start()
    fake.route(router)
    settings.CONFIG = settings.CONFIG.__class__(
        **{
            **settings.CONFIG.__dict__,
            "llm": "openai",
            "openai_api_key": "bench",
            "openai_base_url": fake.base_url,
            "model": "fake-model",
            # The fake listens on loopback: allowed as the environment's OPENAI_BASE_URL would be.
            "egress_allow": AllowList.parse([urlsplit(fake.base_url).netloc]),
        }
    )
    try:
        with mock.patch("agents_app.tools.binding.load_builtin_tools", tools):
            asyncio.run(steps_only(args.repeat) if args.steps_only else main(args.turns, args.repeat))
    finally:
        fake.stop()
