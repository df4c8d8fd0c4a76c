"""A soak of the scale-out shape (issue 28): many turns from concurrent API clients for a long
while, watching what must stay flat (bench/README.md, "The soak").

It starts everything itself: the benchmark's fake model (bench/fake_model.py, 20 model calls per
turn: 3 workers × 5 tool calls), 2 Celery workers (`--pool=solo`, each with its turn host and the
benchmark's no-op tool) and one daphne, on PostgreSQL and Redis. Each client creates a chat and
posts one question with `?wait=1`, over and over, until the turns are done. Every `--every`
seconds it samples the resident memory (RSS) of the web and worker processes, the connections
each role has open (`pg_stat_activity`, by `application_name`) and the turns each worker's host
carries. At the end it checks:

- memory is flat after warm-up (the first `--warmup` share of the turns): growth below a bound;
- database connections never exceeded the pools (ONGRID_DB_POOL_SIZE per process);
- no session is left `running`, and every turn host is back to 0 turns and 0 tasks on its loop;
- every client got 201 / 200 with the model's answer (503s are retried after Retry-After, and counted).

    BENCH_PG=postgres://postgres@127.0.0.1:5432/ongrid_soak BENCH_REDIS=redis://127.0.0.1:6379/14 \\
        .venv/bin/python bench/soak.py --turns 2000 --clients 20 [--json FILE]

BENCH_REDIS is FLUSHED first: give the soak a Redis database of its own. tests/site/test_soak.py
runs a short one on the test database through `start_stack` and `soak`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.compare import Process  # noqa: E402  (the benchmarks' one child-process wrapper)

PYTHON = sys.executable
WEB, WORKER = "ongrid-soak-web", "ongrid-soak-worker"  # application_name of each role's connections
DEFAULT_POOL = 20  # ONGRID_DB_POOL_SIZE's default (ongrid_site/config.py)


# ---- the processes ----------------------------------------------------------------------------


@dataclass
class Stack:
    """The running scale-out shape: where to send requests and which processes to watch."""

    base_url: str
    database_url: str
    pool_size: int
    web: Process
    workers: list[Process]
    model: Process
    logs: Path

    def status_of(self, worker: Process) -> dict:
        """What a worker's host reported last (`worker` mode below writes it)."""
        try:
            return json.loads((self.logs / f"{worker.name}.status.json").read_text())
        except (OSError, ValueError):
            return {}


def _with_application(url: str, name: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}application_name={name}"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def start_stack(
    database_url: str, redis_url: str, logs: Path, workers: int = 2, **env: str
) -> Iterator[Stack]:
    """The fake model, `workers` Celery workers and one daphne on `database_url` / `redis_url`."""
    base = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    base.update(
        DJANGO_SETTINGS_MODULE="ongrid_site.settings",
        PYTHONPATH=str(ROOT),
        SECRET_KEY=os.environ.get("SECRET_KEY") or "soak-only",
        ONGRID_DATA_DIR=str(logs / "data"),
        ONGRID_LLM="openai",
        OPENAI_API_KEY="soak",
        ONGRID_MODEL="fake-model",
        ONGRID_LOG_LEVEL="WARNING",
        ONGRID_API_USER_RATE="off",
        REDIS_URL=redis_url,
        **env,
    )
    started: list[Process] = []
    try:
        model = Process("model", [PYTHON, "bench/fake_model.py", "serve"], base, logs)
        started.append(model)
        base["OPENAI_BASE_URL"] = f"http://127.0.0.1:{model.ready('ready').split()[1]}/v1"
        base["ONGRID_EGRESS_ALLOW"] = "127.0.0.1"
        for i in range(1, workers + 1):
            worker_env = {**base, "DATABASE_URL": _with_application(database_url, WORKER)}
            status = logs / f"worker{i}.status.json"
            argv = [PYTHON, "bench/soak.py", "worker", f"soak{i}", str(status)]
            started.append(Process(f"worker{i}", argv, worker_env, logs))
        for worker in started[1:]:
            worker.ready("soak worker ready")
        port = _free_port()
        web_env = {**base, "DATABASE_URL": _with_application(database_url, WEB)}
        endpoint = f"tcp:port={port}:interface=127.0.0.1:backlog=1024"
        web = Process(
            "web", [PYTHON, "-m", "daphne", "-e", endpoint, "ongrid_site.asgi:application"], web_env, logs
        )
        started.append(web)
        _wait_healthy(f"http://127.0.0.1:{port}", web)
        pool = int(env.get("ONGRID_DB_POOL_SIZE") or os.environ.get("ONGRID_DB_POOL_SIZE") or DEFAULT_POOL)
        yield Stack(f"http://127.0.0.1:{port}", database_url, pool, web, started[1:-1], model, logs)
    finally:
        for process in reversed(started):
            process.stop()


def _wait_healthy(base_url: str, web: Process, timeout: float = 90.0) -> None:
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and web.handle.poll() is None:
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(base_url + "/healthz", timeout=2) as answer:
                if answer.status == 200:
                    return
        time.sleep(0.2)
    raise RuntimeError(f"daphne did not become healthy:\n{web.log.read_text()[-2000:]}")


def worker_main(name: str, status_path: str) -> None:
    """`bench/soak.py worker NAME STATUS`: a Celery worker of the product with the benchmark's
    no-op tool, writing its turn host's load to STATUS twice a second."""
    import django

    django.setup()
    from bench import ongrid_side

    ongrid_side.use_bench_tools()
    from celery.signals import worker_ready

    from agents_app.runtime.turn_host import turn_host
    from ongrid_site.celery import app

    def report() -> None:
        while True:
            # Looked up every time: the worker replaces its host when it starts (after a fork too).
            host = turn_host()
            loop = host.loop()
            with contextlib.suppress(RuntimeError):  # the loop's task set changed while counted
                tasks = [repr(task.get_coro())[:160] for task in asyncio.all_tasks(loop)]
                status = {"running": host.running, "tasks": len(tasks), "task_names": tasks[:5]}
                Path(status_path).write_text(json.dumps(status))
            time.sleep(0.5)

    threading.Thread(target=report, daemon=True).start()
    worker_ready.connect(lambda **kwargs: print("soak worker ready", flush=True), weak=False)
    app.worker_main(
        [
            "worker",
            "--pool=solo",
            "--loglevel=WARNING",
            "--without-gossip",
            "--without-mingle",
            "-n",
            f"{name}@%h",
        ]
    )


# ---- the soak ---------------------------------------------------------------------------------


@dataclass
class Sample:
    at: float  # seconds since the start
    turns_done: int
    rss_kib: dict[str, int]  # by process name
    connections: dict[str, int]  # by role (application_name)
    host_running: int  # turns the workers' hosts carry
    host_tasks: int  # tasks on the workers' host loops


@dataclass
class Report:
    turns: int
    clients: int
    seconds: float = 0.0
    answered: int = 0
    wrong: list[str] = field(default_factory=list)  # anything but 201 / 200 with the answer
    retried_503: int = 0
    samples: list[Sample] = field(default_factory=list)
    warm_rss_kib: dict[str, int] = field(default_factory=dict)
    end_rss_kib: dict[str, int] = field(default_factory=dict)
    peak_connections: dict[str, int] = field(default_factory=dict)
    connection_bounds: dict[str, int] = field(default_factory=dict)
    left_running: int = 0
    host_running_end: int = 0
    host_tasks_end: int = 0
    host_tasks_left: list[str] = field(default_factory=list)  # what those tasks run, for the log

    def growth_kib(self) -> dict[str, int]:
        return {name: self.end_rss_kib[name] - self.warm_rss_kib.get(name, 0) for name in self.end_rss_kib}

    def problems(self, growth_limit_kib: int) -> list[str]:
        """What the soak must not show; empty when the run was clean."""
        found = [f"{len(self.wrong)} bad answers, e.g. {self.wrong[:3]}"] if self.wrong else []
        if self.answered != self.turns:
            found.append(f"{self.answered} of {self.turns} turns answered")
        found += [
            f"{name} grew {kib} KiB after warm-up (limit {growth_limit_kib})"
            for name, kib in self.growth_kib().items()
            if kib > growth_limit_kib
        ]
        found += [
            f"{role} had {self.peak_connections.get(role, 0)} connections open (pools allow {bound})"
            for role, bound in self.connection_bounds.items()
            if self.peak_connections.get(role, 0) > bound
        ]
        if self.left_running:
            found.append(f"{self.left_running} sessions left running")
        if self.host_running_end or self.host_tasks_end:
            found.append(
                f"turn hosts still carry {self.host_running_end} turns, {self.host_tasks_end} tasks: "
                f"{self.host_tasks_left}"
            )
        return found


def _rss_kib(pid: int) -> int:
    from bench.measure import rss_kib

    try:
        return rss_kib(pid)
    except OSError:
        return 0


class _Sampler:
    """Samples the stack every `every` seconds on its own thread (with its own connection)."""

    def __init__(self, stack: Stack, every: float, progress: list[int]) -> None:
        self.stack, self.every, self.progress = stack, every, progress
        self.samples: list[Sample] = []
        self.peak: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._started = time.monotonic()

    def _run(self) -> None:
        import psycopg

        with psycopg.connect(self.stack.database_url, autocommit=True) as db:
            while True:
                self.take(db)
                if self._stop.wait(self.every):
                    self.take(db)
                    return

    def take(self, db) -> Sample:
        rows = db.execute(
            "SELECT application_name, count(*) FROM pg_stat_activity"
            " WHERE application_name IN (%s, %s) GROUP BY application_name",
            [WEB, WORKER],
        ).fetchall()
        connections = {WEB: 0, WORKER: 0, **dict(rows)}
        for role, count in connections.items():
            self.peak[role] = max(self.peak.get(role, 0), count)
        processes = [self.stack.web, *self.stack.workers]
        statuses = [self.stack.status_of(w) for w in self.stack.workers]
        sample = Sample(
            at=round(time.monotonic() - self._started, 2),
            turns_done=self.progress[0],
            rss_kib={p.name: _rss_kib(p.pid) for p in processes},
            connections=connections,
            host_running=sum(s.get("running", 0) for s in statuses),
            host_tasks=sum(s.get("tasks", 0) for s in statuses),
        )
        self.samples.append(sample)
        return sample

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


async def _client(http, queue: asyncio.Queue, report: Report, progress: list[int]) -> None:
    """One API client: a new chat per turn, one question, wait for the answer; 503 → retry."""
    while True:
        try:
            index = queue.get_nowait()
        except asyncio.QueueEmpty:
            return
        while True:
            created = await http.post("/api/sessions/", json={"title": f"soak {index}"})
            if created.status_code == 201:
                chat = created.json()["id"]
                reply = await http.post(
                    f"/api/sessions/{chat}/messages/?wait=1", json={"content": f"turn {index}"}
                )
            else:
                reply = created
            if reply.status_code != 503:
                break
            report.retried_503 += 1
            await asyncio.sleep(float(reply.headers.get("Retry-After") or 1))
        body = reply.json() if reply.headers.get("content-type", "").startswith("application/json") else {}
        if reply.status_code == 200 and body.get("answer", "").startswith("woven answer"):
            report.answered += 1
        else:
            report.wrong.append(f"turn {index}: {reply.status_code} {str(body)[:200]}")
        progress[0] += 1


async def _drive(base_url: str, token: str, report: Report, progress: list[int]) -> None:
    import httpx

    queue: asyncio.Queue[int] = asyncio.Queue()
    for index in range(report.turns):
        queue.put_nowait(index)
    limits = httpx.Limits(max_connections=report.clients + 5, max_keepalive_connections=report.clients + 5)
    headers = {"Authorization": f"Token {token}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=600, limits=limits) as http:
        await asyncio.gather(*(_client(http, queue, report, progress) for _ in range(report.clients)))


def _settled(stack: Stack, timeout: float = 60.0) -> tuple[int, int, list[str]]:
    """(turns, tasks, what the tasks run) the worker hosts carry once they had `timeout` seconds
    to wind down (returns as soon as they are idle; a loaded machine takes longer than an idle one)."""
    deadline = time.monotonic() + timeout
    while True:
        statuses = [stack.status_of(w) for w in stack.workers]
        running = sum(s.get("running", 0) for s in statuses)
        tasks = sum(s.get("tasks", 0) for s in statuses)
        if (running == 0 and tasks == 0) or time.monotonic() > deadline:
            return running, tasks, [name for s in statuses for name in s.get("task_names", [])]
        time.sleep(0.5)


def soak(
    stack: Stack, token: str, turns: int, clients: int, every: float = 1.0, warmup: float = 0.2
) -> Report:
    """Run `turns` turns from `clients` concurrent API clients against `stack`; sample as it goes."""
    import psycopg

    report = Report(turns=turns, clients=clients)
    progress = [0]
    started = time.monotonic()
    with _Sampler(stack, every, progress) as sampler:
        asyncio.run(_drive(stack.base_url, token, report, progress))
    report.seconds = round(time.monotonic() - started, 1)
    report.samples = sampler.samples
    warm = [s for s in sampler.samples if s.turns_done >= turns * warmup] or sampler.samples
    report.warm_rss_kib = warm[0].rss_kib
    report.end_rss_kib = sampler.samples[-1].rss_kib
    report.peak_connections = sampler.peak
    report.connection_bounds = {WEB: stack.pool_size, WORKER: stack.pool_size * len(stack.workers)}
    report.host_running_end, report.host_tasks_end, report.host_tasks_left = _settled(stack)
    with psycopg.connect(stack.database_url, autocommit=True) as db:
        row = db.execute("SELECT count(*) FROM chat_sessions WHERE status = 'running'").fetchone()
        report.left_running = row[0]
    return report


def summary(report: Report) -> str:
    """The figures bench/README.md publishes, as a Markdown table."""
    growth = report.growth_kib()
    rows = [
        ("turns / clients", f"{report.turns} / {report.clients}"),
        ("wall time (s), turns/s", f"{report.seconds:.0f}, {report.turns / max(report.seconds, 0.001):.1f}"),
        ("answered 200 with the answer", f"{report.answered} ({report.retried_503} retries after 503)"),
        *[
            (
                f"RSS {name}: after warm-up → end (MiB)",
                f"{report.warm_rss_kib[name] / 1024:.0f} → "
                f"{report.end_rss_kib[name] / 1024:.0f} ({growth[name] / 1024:+.1f})",
            )
            for name in report.end_rss_kib
        ],  # fmt: skip
        *[
            (f"peak connections, {role}", f"{report.peak_connections.get(role, 0)} (pools: {bound})")
            for role, bound in report.connection_bounds.items()
        ],
        ("sessions left running", str(report.left_running)),
        ("turn hosts at the end: turns / loop tasks", f"{report.host_running_end} / {report.host_tasks_end}"),
    ]
    return "\n".join(["| measure | value |", "|---|---|", *[f"| {k} | {v} |" for k, v in rows]])


def _token_for_soak(database_url: str) -> str:
    """A fresh organization, member and API token on the soak's database."""
    script = (
        "import django, time; django.setup()\n"
        "from ops_app.models import ApiToken\n"
        "from ops_app.tenancy import roles\n"
        "from ops_app.tenancy.accounts import create_organization, create_user\n"
        "stamp = time.time_ns()\n"
        "org = create_organization(f'Soak {stamp}', f'soak-{stamp}')\n"
        "user = create_user(f'soak{stamp}', 'soak-pass-123', org, roles.MEMBER)\n"
        "print(ApiToken.issue(user)[1])\n"
    )
    env = {**os.environ, "DATABASE_URL": database_url, "SECRET_KEY": "soak-only", "PYTHONPATH": str(ROOT)}
    env.setdefault("DJANGO_SETTINGS_MODULE", "ongrid_site.settings")
    env.pop("REDIS_URL", None)
    done = subprocess.run(
        [PYTHON, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip().splitlines()[-1]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--every", type=float, default=2.0, help="seconds between samples")
    parser.add_argument("--warmup", type=float, default=0.2, help="share of the turns that is warm-up")
    parser.add_argument("--growth-limit-mib", type=float, default=32.0)
    parser.add_argument("--json", help="also write the samples and figures to this file")
    args = parser.parse_args()
    from bench.compare import ensure_database, flush_redis

    pg = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432/ongrid_soak")
    redis_url = os.environ.get("BENCH_REDIS", "")
    if not redis_url:
        print("set BENCH_REDIS to a Redis database the soak may flush", file=sys.stderr)
        return 2
    ensure_database(pg)
    migrate_env = {**os.environ, "DATABASE_URL": pg, "SECRET_KEY": "soak-only"}
    migrate_env.pop("REDIS_URL", None)
    subprocess.run(
        [PYTHON, "manage.py", "migrate", "--verbosity", "0"], cwd=ROOT, env=migrate_env, check=True
    )
    flush_redis(redis_url)
    token = _token_for_soak(pg)
    logs = Path(tempfile.mkdtemp(prefix="ongrid-soak-"))
    with start_stack(pg, redis_url, logs) as stack:
        report = soak(stack, token, args.turns, args.clients, args.every, args.warmup)
    load = os.getloadavg()
    print(summary(report))
    print(f"\nload average at the end: {load[0]:.1f}; logs: {logs}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps(asdict(report), indent=2))
    problems = report.problems(int(args.growth_limit_mib * 1024))
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "worker":
        worker_main(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
