"""What every side of the peer comparison measures, the same way (bench/compare.py runs them).

A side supplies `turn()`, an async function that runs one whole turn of the script (creating its
chat or session first) and returns the `time.perf_counter()` at which the turn ended. A lone turn
is timed from its call; N turns at once are each timed from the moment all N were started, so
whatever a side makes a turn wait for before its own work begins (a thread for the chat row, a
queue) is counted. `measure` also samples the resident memory of the processes that carry the
turns and reads the fake model's byte counters.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import time
import urllib.request
from collections.abc import Awaitable, Callable


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stats(base_url: str, reset: bool = False) -> dict:
    """The fake model's counters (bench/fake_model.py): chat requests and their body bytes."""
    root = base_url.rstrip("/")
    request = urllib.request.Request(
        root + ("/stats/reset" if reset else "/stats"), method="POST" if reset else "GET"
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


async def measure(
    turn: Callable[[], Awaitable[float]],  # returns perf_counter() at the turn's end
    *,
    base_url: str,
    repeat: int,
    levels: list[int],
    pids: list[int] | None = None,
    warmup: int = 1,
) -> dict:
    """Lone turns (median/p95, request bytes per call), then each level of concurrent turns."""
    pids = pids or [os.getpid()]
    await asyncio.gather(*(turn() for _ in range(warmup)))  # at once, so every worker process warms up
    stats(base_url, reset=True)
    lone = []
    for _ in range(repeat):
        started = time.perf_counter()
        lone.append(await turn() - started)
    counters = stats(base_url)
    result: dict = {
        "lone_median": statistics.median(lone),
        "lone_p95": pct(lone, 0.95),
        "calls_per_turn": counters["requests"] / repeat,
        "bytes_per_call": counters["bytes"] / max(1, counters["requests"]),
        "largest_request": counters["largest"],
    }
    for level in levels:
        base = sum(rss_kib(p) for p in pids)
        peak = [base]
        finished = asyncio.Event()

        async def sample(peak: list[int] = peak, finished: asyncio.Event = finished) -> None:
            while not finished.is_set():
                peak[0] = max(peak[0], sum(rss_kib(p) for p in pids))
                await asyncio.sleep(0.05)

        sampler = asyncio.ensure_future(sample())
        cpu = sum(cpu_seconds(p) for p in pids)
        started = time.perf_counter()
        times = [end - started for end in await asyncio.gather(*(turn() for _ in range(level)))]
        wall = max(times)
        cpu = sum(cpu_seconds(p) for p in pids) - cpu
        finished.set()
        await sampler
        result[f"c{level}"] = {
            "median": statistics.median(times),
            "p95": pct(times, 0.95),
            "turns_per_s": level / wall,
            "kib_per_turn": (peak[0] - base) / level,
            "cpu_per_turn": cpu / level,
        }
    return result
