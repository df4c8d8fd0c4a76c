"""Ongrid on the peer comparison's script, through its real turn path (bench/README.md).

A turn is started as the API and the chat page start it: `agents_app.runtime.turns.astart_turn` (the
user's message saved, the session marked running, the turn handed to the executor).

- `--shape embedded`: no REDIS_URL, so the `inline` executor runs the turn as a task of this
  process's loop (SQLite, or PostgreSQL when DATABASE_URL is set). The turn's task is awaited.
- `--shape celery`: REDIS_URL set, so the turn is queued to the Celery workers started by
  bench/compare.py (bench/celery_worker.py, each with its turn host); the turn is over when its
  session row is back to `idle`, which this process polls every 20 ms.

The model is bench/fake_model.py (OPENAI_BASE_URL); the workers' only tool is a no-op
`query_promql`. Prints one JSON line (bench/measure.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ongrid_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("ONGRID_DATA_DIR", tempfile.mkdtemp(prefix="ongrid-bench-"))
os.environ.setdefault("ONGRID_LLM", "openai")
os.environ.setdefault("OPENAI_API_KEY", "bench")
os.environ.setdefault("ONGRID_MODEL", "fake-model")
os.environ.setdefault("ONGRID_LOG_LEVEL", "WARNING")


async def noop_tool(ctx, **arguments) -> dict:
    return {"status": "success", "series": []}


def bench_tools() -> dict:
    from agents_app.toolsets.contract import Tool

    return {
        "query_promql": Tool(
            "query_promql", "Run a PromQL query (a no-op for the benchmark).", {"type": "object"}, noop_tool
        )
    }


def use_bench_tools() -> None:
    """Every organization's built-in tools become the one no-op (in this process)."""
    from agents_app.tools import binding as org_tools

    org_tools.load_builtin_tools = bench_tools


async def main(args: argparse.Namespace) -> dict:
    from asgiref.sync import sync_to_async

    from agents_app.runtime.turns import astart_turn
    from bench.measure import measure
    from chat_app import services
    from chat_app.models import ChatSession, SessionStatus
    from ops_app.tenancy import roles
    from ops_app.tenancy.accounts import create_organization, create_user

    stamp = time.time_ns()
    org = await sync_to_async(create_organization)(f"Bench {stamp}", f"bench-{stamp}")
    user = await sync_to_async(create_user)(f"bench{stamp}", "bench-pass-123", org, roles.MEMBER)
    waiting: dict[int, asyncio.Future] = {}

    async def poll() -> None:
        """The celery shape's end of turn: the row back to idle (what `wait_for_turn` polls)."""
        idle = sync_to_async(
            lambda ids: list(
                ChatSession.objects.filter(pk__in=ids)
                .exclude(status=SessionStatus.RUNNING)
                .values_list("pk", "error")
            ),
            thread_sensitive=False,
        )
        while True:
            if waiting:
                for pk, error in await idle(list(waiting)):
                    future = waiting.pop(pk)
                    future.set_exception(AssertionError(error)) if error else future.set_result(None)
            await asyncio.sleep(0.02)

    poller = asyncio.ensure_future(poll()) if args.shape == "celery" else None

    async def turn() -> float:
        chat = await sync_to_async(services.start_chat, thread_sensitive=False)(user)
        if args.shape == "celery":
            await astart_turn(chat, "inspect the three web hosts")  # the row is `running` once it returns
            done = waiting[chat.pk] = asyncio.get_running_loop().create_future()
            await done
        else:
            _message, task = await astart_turn(chat, "inspect the three web hosts")
            await task
        ended = time.perf_counter()
        if args.shape != "celery":
            row = await ChatSession.objects.aget(pk=chat.pk)
            assert row.status == SessionStatus.IDLE and not row.error, row.error
        return ended

    levels = [int(n) for n in args.levels.split(",") if n]
    pids = [int(p) for p in args.pids.split(",") if p] or None
    try:
        return await measure(
            turn,
            base_url=os.environ["OPENAI_BASE_URL"],
            repeat=args.repeat,
            levels=levels,
            pids=pids,
            warmup=4 if args.shape == "celery" else 1,  # a turn or two for each worker process
        )
    finally:
        if poller is not None:
            poller.cancel()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", choices=["embedded", "celery"], default="embedded")
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--levels", default="20,50,200")
    parser.add_argument(
        "--pids", default="", help="the processes that carry the turns (memory), default this one"
    )
    parser.add_argument("--migrate", action="store_true")
    args = parser.parse_args()
    if args.shape == "embedded":
        os.environ.pop("REDIS_URL", None)
    import django

    django.setup()
    use_bench_tools()
    if args.migrate:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
    print(json.dumps(asyncio.run(main(args))))
