"""Private servers the fault tests stop, kill and restart mid-turn: a Redis and a PostgreSQL of
their own (never the shared ones other tests use), and the processes of the scale-out shape
(daphne, Celery workers) pointed at them.

Every server runs in its own process group on a free loopback port and is killed at the end of
its `with` block (or fixture), whatever the test did to it. Readiness is polled with a deadline
(`procs.wait_until`), never slept for.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import procs
from tests.support.django_subprocess import ROOT, child_env
from tests.support.required import require

REDIS_SERVER = "/usr/bin/redis-server"
PG_BIN = Path("/usr/lib/postgresql/15/bin")


def _kill_group(process: subprocess.Popen | None) -> None:
    """SIGKILL the whole process group (a server and its children), and reap the leader."""
    if process is None or process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


class RedisServer:
    """`redis-server` with no persistence: a restart comes back empty, as a failover to a fresh
    replica would (the channel layer's groups are gone, the broker's queues too)."""

    def __init__(self, workdir: Path) -> None:
        self.binary = procs.binary(REDIS_SERVER)
        require(self.binary is not None, "redis-server")
        self.workdir = workdir
        self.port = procs.free_port()
        self.process: subprocess.Popen | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        self.starts += 1
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir)]
        args += ["--save", "", "--appendonly", "no"]
        self.process = procs.start(args, self.workdir / f"redis-{self.starts}.log")
        procs.wait_until(self.answers, 20, f"redis-server on port {self.port}")
        return self

    def answers(self) -> bool:
        import redis

        client = redis.Redis.from_url(self.url, socket_timeout=1, socket_connect_timeout=1)
        try:
            return bool(client.ping())
        finally:
            client.close()

    def kill(self) -> None:
        """Down at once, like a crash: clients see their connections reset."""
        _kill_group(self.process)
        self.process = None

    def restart(self) -> None:
        self.kill()
        self.start()


class PostgresServer:
    """A throwaway cluster (`initdb`, trust auth on loopback and a socket in its own folder),
    served by `postgres` in its own process group."""

    def __init__(self, workdir: Path) -> None:
        require((PG_BIN / "postgres").exists() and (PG_BIN / "initdb").exists(), "PostgreSQL 15 binaries")
        self.workdir = workdir
        # PostgreSQL refuses to run as root: then the cluster belongs to the `postgres` account,
        # in a folder of its own (pytest's tmp folders are private to root).
        self.cluster = Path(tempfile.mkdtemp(prefix="ongrid-pg-"))
        self._as = []
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self.cluster, account.pw_uid, account.pw_gid)
            self._as = [
                "setpriv",
                f"--reuid={account.pw_uid}",
                f"--regid={account.pw_gid}",
                "--init-groups",
                "--",
            ]
        self.data = self.cluster / "data"
        self.socket_dir = self.cluster
        self.port = procs.free_port()
        self.process: subprocess.Popen | None = None
        self.starts = 0

    def url(self, database: str = "ongrid") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def init(self) -> PostgresServer:
        subprocess.run(
            [
                *self._as,
                str(PG_BIN / "initdb"),
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "-A",
                "trust",
                "-E",
                "UTF8",
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        return self

    def start(self) -> PostgresServer:
        self.starts += 1
        args = [*self._as, str(PG_BIN / "postgres"), "-D", str(self.data), "-p", str(self.port)]
        args += ["-k", str(self.socket_dir)]
        args += ["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=100"]
        self.process = procs.start(args, self.workdir / f"postgres-{self.starts}.log")
        procs.wait_until(self.answers, 30, f"postgres on port {self.port}")
        return self

    def answers(self) -> bool:
        import psycopg

        with psycopg.connect(self.url("postgres"), connect_timeout=1) as conn:
            return conn.execute("SELECT 1").fetchone() == (1,)

    def create_database(self, name: str = "ongrid") -> str:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        """A fast shutdown (SIGINT): clients are disconnected, as in a restart or a failover."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                _kill_group(self.process)
        self.process = None

    def kill(self) -> None:
        _kill_group(self.process)
        self.process = None

    def remove(self) -> None:
        self.kill()
        shutil.rmtree(self.cluster, ignore_errors=True)


@contextlib.contextmanager
def private_redis(workdir: Path) -> Iterator[RedisServer]:
    server = RedisServer(workdir).start()
    try:
        yield server
    finally:
        server.kill()


@contextlib.contextmanager
def private_postgres(workdir: Path) -> Iterator[PostgresServer]:
    server = PostgresServer(workdir)
    try:
        yield server.init().start()
    finally:
        server.remove()


def stack_env(data_dir: Path, llm_url: str, redis_url: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of daphne or a worker: the test database unless DATABASE_URL is given,
    `redis_url` (None: the embedded shape, turns inside daphne) and the fake LLM."""
    env = child_env(
        ONGRID_DATA_DIR=str(data_dir),
        ONGRID_LLM="openai",
        OPENAI_API_KEY="test-key",
        OPENAI_BASE_URL=llm_url,
        ONGRID_MODEL="fake-model",
        ONGRID_LLM_MAX_RETRIES="0",
        ONGRID_LOG_LEVEL="INFO",
        ONGRID_HTTPS="0",
        **extra,
    )
    env.pop("REDIS_URL", None)
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


class Daphne:
    """A daphne serving Ongrid on a free port, with its log in `workdir`."""

    def __init__(self, env: dict[str, str], workdir: Path, name: str = "daphne") -> None:
        self.env = env
        self.port = procs.free_port()
        self.log = workdir / f"{name}.log"
        self.process: subprocess.Popen | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_base(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self) -> Daphne:
        command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port)]
        command.append("ongrid_site.asgi:application")
        log = self.log.open("ab")
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        procs.wait_until(self._serving, 60, f"daphne on port {self.port} (log: {self.log})")
        return self

    def _serving(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"daphne exited: {self.log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(self.base + "/healthz", timeout=5)
        except urllib.error.HTTPError:
            pass  # it answers: a 503 names what is down, which some tests want
        return True

    def kill(self) -> None:
        """SIGKILL: no shutdown, open sockets drop as in a crash."""
        _kill_group(self.process)
        self.process = None

    def stop(self) -> None:
        if self.process is not None:
            procs.stop(self.process)
        self.process = None


class Worker:
    """`celery worker --pool=solo` on the given environment; ready once its log says so."""

    def __init__(self, env: dict[str, str], workdir: Path, name: str = "worker") -> None:
        self.env = env
        self.name = name
        self.log = workdir / f"{name}.log"
        self.process: subprocess.Popen | None = None

    @property
    def identity(self) -> str:
        """The owner a session row carries while this worker runs its turn (`host:pid`)."""
        from tests.support.celery_worker import identity_of

        assert self.process is not None
        return identity_of(self.process)

    def start(self) -> Worker:
        command = [sys.executable, "-m", "celery", "-A", "ongrid_site", "worker", "--pool=solo", "-l", "info"]
        command += ["--without-gossip", "--without-mingle", "--without-heartbeat"]
        command += ["-n", f"{self.name}-{os.getpid()}@%h"]
        log = self.log.open("ab")
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        log.close()
        procs.wait_until(self._ready, 60, f"celery worker {self.name} (log: {self.log})")
        return self

    def _ready(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"celery worker exited: {self.log.read_text()[-2000:]}")
        return " ready." in self.log.read_text(errors="replace")

    def kill(self) -> None:
        _kill_group(self.process)
        self.process = None

    def stop(self) -> None:
        if self.process is not None:
            procs.stop(self.process)
        self.process = None


@contextlib.contextmanager
def running(*servers: Daphne | Worker) -> Iterator[None]:
    """Start `servers` in order; kill every one of them at the end (the test may have already)."""
    started: list[Daphne | Worker] = []
    try:
        for server in servers:
            started.append(server.start())
        yield
    finally:
        for server in reversed(started):
            server.kill()


def fail_with_logs(message: str, *logs: Path) -> None:
    tails = "\n".join(
        f"--- {log}:\n{log.read_text(errors='replace')[-3000:]}" for log in logs if log.exists()
    )
    pytest.fail(f"{message}\n{tails}")
