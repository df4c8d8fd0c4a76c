"""The peer comparison: Ongrid in its three shapes against the OpenAI Agents SDK, one script, one
fake model, one table (bench/README.md). `bench/run` calls this.

Starts two fake model servers (bench/fake_model.py: instant, and 0.5 s per call), measures the
instant one's own capacity, then runs each side in its own process, one after the other:

    sdk          the Agents SDK, agents-as-tools, streamed
    sdk-session  the same with SQLiteSession persistence
    sdk-personas the same, its two agents' instructions Ongrid's shipped persona bodies (the bytes
                 a turn sends when both products carry the same prompts)
    sqlite       Ongrid embedded: the turn runs in the process that starts it (inline executor)
    pg           the same on PostgreSQL (pooled), when BENCH_PG is reachable
    celery       Ongrid scale-out: 2 Celery workers (bench/celery_worker.py) with their turn
                 hosts, PostgreSQL and Redis (BENCH_PG and BENCH_REDIS reachable)
    steps        Ongrid's own overhead per ReAct step on PostgreSQL (bench/turn_overhead.py)

BENCH_REDIS must name a Redis database the benchmark owns: it is flushed before the scale-out runs,
so there is no default (without it the `celery` side is skipped).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
PYTHON = str(ROOT / ".venv" / "bin" / "python")
SIDES = ["sdk", "sdk-session", "sdk-personas", "sqlite", "pg", "celery"]
LOGS = Path(tempfile.mkdtemp(prefix="ongrid-bench-logs-"))


def reachable(url: str, default_port: int) -> bool:
    parsed = urlparse(url)
    try:
        with socket.create_connection(
            (parsed.hostname or "127.0.0.1", parsed.port or default_port), timeout=1
        ):
            return True
    except OSError:
        return False


def ensure_database(url: str) -> None:
    import psycopg

    parsed = urlparse(url)
    name = parsed.path.lstrip("/")
    admin = parsed._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as connection:
        if not connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            connection.execute(f'CREATE DATABASE "{name}"')


def flush_redis(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


class Process:
    """A child process in its own process group whose output goes to a log file (in `logs`, the
    run's log folder by default); `ready` waits for a line in it. bench/soak.py uses it too."""

    def __init__(self, name: str, argv: list[str], env: dict[str, str], logs: Path = LOGS) -> None:
        self.name = name
        self.log = logs / f"{name}.log"
        self.handle = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    @property
    def pid(self) -> int:
        return self.handle.pid

    def ready(self, marker: str, timeout: float = 90.0) -> str:
        """The first log line containing `marker` (the process says it is up)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.log.read_text(errors="replace").splitlines():
                if marker in line:
                    return line
            if self.handle.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"{self.log} never said {marker!r}:\n{self.log.read_text()[-2000:]}")

    def stop(self) -> None:
        if self.handle.poll() is None:
            os.killpg(self.handle.pid, signal.SIGTERM)
            try:
                self.handle.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.handle.pid, signal.SIGKILL)
                self.handle.wait()


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(extra)
    return env


def run_json(name: str, argv: list[str], env: dict[str, str], timeout: float = 900) -> dict:
    log = LOGS / f"{name}.log"
    with log.open("w") as err:
        done = subprocess.run(
            argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True, timeout=timeout
        )
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed ({done.returncode}); see {log}:\n{log.read_text()[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def fake_model(name: str, delay: float) -> tuple[Process, str]:
    server = Process(name, [PYTHON, "bench/fake_model.py", "serve", "--delay", str(delay)], base_env())
    port = server.ready("ready").split()[1]
    return server, f"http://127.0.0.1:{port}/v1"


def side(name: str, base_url: str, levels: str, repeat: int, pg: str, redis_url: str) -> dict:
    args = ["--levels", levels, "--repeat", str(repeat)]
    if name.startswith("sdk"):
        extra = {"sdk-session": ["--session"], "sdk-personas": ["--session", "--personas"]}.get(name, [])
        return run_json(
            name, [PYTHON, "bench/sdk_side.py", "--base-url", base_url, *args, *extra], base_env()
        )
    ongrid = [PYTHON, "bench/ongrid_side.py", *args]
    if name == "sqlite":
        return run_json(name, [*ongrid, "--migrate"], base_env(OPENAI_BASE_URL=base_url))
    if name == "pg":
        return run_json(name, ongrid, base_env(OPENAI_BASE_URL=base_url, DATABASE_URL=pg))
    env = base_env(OPENAI_BASE_URL=base_url, DATABASE_URL=pg, REDIS_URL=redis_url)
    flush_redis(redis_url)
    workers = [Process(f"worker{i}", [PYTHON, "bench/celery_worker.py", f"bench{i}"], env) for i in (1, 2)]
    try:
        for worker in workers:
            worker.ready("bench worker ready")
        pids = ",".join(str(w.handle.pid) for w in workers)
        return run_json(name, [*ongrid, "--shape", "celery", "--pids", pids], env)
    finally:
        for worker in workers:
            worker.stop()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--only", default=",".join(SIDES), help=f"comma-separated subset of {','.join(SIDES)}"
    )
    parser.add_argument("--models", default="instant,slow", help="instant, slow (0.5 s per call), or both")
    parser.add_argument("--no-steps", action="store_true", help="skip the per-step overhead on PostgreSQL")
    parser.add_argument("--quick", action="store_true", help="3 lone turns, 20 concurrent only: a smoke run")
    parser.add_argument("--json", help="also write the raw figures to this file")
    args = parser.parse_args()
    pg = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432/ongrid_bench")
    redis_url = os.environ.get("BENCH_REDIS", "")  # no default: the run flushes it
    has_pg, has_redis = reachable(pg, 5432), bool(redis_url) and reachable(redis_url, 6379)
    wanted = [s for s in args.only.split(",") if s]
    sides = [s for s in wanted if (s != "pg" or has_pg) and (s != "celery" or (has_pg and has_redis))]
    for skipped in sorted(set(wanted) - set(sides)):
        print(
            f"skipping {skipped}: PostgreSQL/Redis not reachable at {pg} / {redis_url or '-'}",
            file=sys.stderr,
        )
    repeat, instant_levels, slow_levels = (3, "20", "20") if args.quick else (10, "20,50,200", "200")
    if has_pg and ({"pg", "celery"} & set(sides) or not args.no_steps):
        ensure_database(pg)
        migrate = [PYTHON, "manage.py", "migrate", "--verbosity", "0"]
        subprocess.run(migrate, cwd=ROOT, env=base_env(DATABASE_URL=pg, SECRET_KEY="bench-only"), check=True)
    results: dict = {"machine": {"cpus": os.cpu_count(), "load": os.getloadavg()}, "sides": {}}
    servers: list[Process] = []
    try:
        instant, instant_url = fake_model("model-instant", 0.0)
        slow, slow_url = fake_model("model-slow", 0.5)
        servers += [instant, slow]
        port = urlparse(instant_url).port
        results["capacity"] = run_json(
            "capacity", [PYTHON, "bench/fake_model.py", "capacity", "--port", str(port)], base_env()
        )
        print(f"fake model capacity: {results['capacity']['requests_per_s']:.0f} requests/s", file=sys.stderr)
        for model in [m for m in args.models.split(",") if m]:
            url, levels = (instant_url, instant_levels) if model == "instant" else (slow_url, slow_levels)
            for name in sides:
                started = time.monotonic()
                figures = side(name, url, levels, repeat if model == "instant" else 2, pg, redis_url)
                results["sides"][f"{name}/{model}"] = figures
                print(f"{name}/{model}: {time.monotonic() - started:.0f} s", file=sys.stderr)
        if has_pg and not args.no_steps:
            steps = [
                PYTHON,
                "bench/turn_overhead.py",
                "--steps-only",
                "--repeat",
                "5" if args.quick else "20",
            ]
            results["steps_pg"] = run_json("steps", steps, base_env(DATABASE_URL=pg))
    finally:
        for server in servers:
            server.stop()
    results["machine"]["load_after"] = os.getloadavg()
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print(table(results))
    print(f"\nlogs: {LOGS}", file=sys.stderr)
    return 0


def table(results: dict) -> str:
    """Markdown: one column per side, one row per figure; the slow model's rows at the bottom."""
    names = list(dict.fromkeys(key.split("/")[0] for key in results["sides"]))
    lines = [
        f"fake model capacity: {results['capacity']['requests_per_s']:.0f} requests/s "
        "(its own, 20 keep-alive clients); load average before/after: "
        f"{results['machine']['load'][0]:.1f} / {results['machine']['load_after'][0]:.1f}",
        "",
        "| measure | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]

    def row(label: str, model: str, pick) -> None:
        cells = []
        for name in names:
            figures = results["sides"].get(f"{name}/{model}")
            try:
                cells.append(pick(figures) if figures else "–")
            except KeyError:
                cells.append("–")
        if any(c != "–" for c in cells):
            lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row(
        "one turn, median / p95 (ms)",
        "instant",
        lambda f: f"{f['lone_median'] * 1000:.0f} / {f['lone_p95'] * 1000:.0f}",
    )
    row("model calls per turn", "instant", lambda f: f"{f['calls_per_turn']:.0f}")
    row("request bytes per model call (mean / largest)", "instant",
        lambda f: f"{f['bytes_per_call'] / 1000:.1f} KB / {f['largest_request'] / 1000:.1f} KB")  # fmt: skip
    for level in (20, 50, 200):
        row(f"{level} concurrent: per turn median / p95 (s)", "instant",
            lambda f, n=level: f"{f[f'c{n}']['median']:.2f} / {f[f'c{n}']['p95']:.2f}")  # fmt: skip
        row(f"{level} concurrent: turns/s", "instant", lambda f, n=level: f"{f[f'c{n}']['turns_per_s']:.1f}")
        row(
            f"{level} concurrent: CPU per turn (s)",
            "instant",
            lambda f, n=level: f"{f[f'c{n}']['cpu_per_turn']:.2f}",
        )
    row("0.5 s model: one turn (s)", "slow", lambda f: f"{f['lone_median']:.2f}")
    for level in (20, 200):
        row(f"0.5 s model, {level} concurrent: per turn median / p95 (s)", "slow",
            lambda f, n=level: f"{f[f'c{n}']['median']:.2f} / {f[f'c{n}']['p95']:.2f}")  # fmt: skip
        row(f"0.5 s model, {level} concurrent ÷ one turn (target ≤ 1.5)", "slow",
            lambda f, n=level: f"{f[f'c{n}']['median'] / f['lone_median']:.2f}×")  # fmt: skip
        row(f"0.5 s model, {level} concurrent: memory per turn (KiB RSS)", "slow",
            lambda f, n=level: f"{f[f'c{n}']['kib_per_turn']:.0f}")  # fmt: skip
    steps = results.get("steps_pg")
    if steps:
        lines += [
            "",
            f"Ongrid on PostgreSQL, overhead per ReAct step excl. LLM and tool (target ≤ 3 ms): median "
            f"{steps['step_median'] * 1000:.1f} ms, p95 {steps['step_p95'] * 1000:.1f} ms (n={steps['n']})",
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
