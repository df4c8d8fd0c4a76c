"""A real Celery worker process on the test database and the test's Redis, for scale-out tests."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings

from fakes.openai_server import RecordedRequest, Reply, text
from tests.support.django_subprocess import ROOT, child_env
from tests.support.required import require


@contextlib.contextmanager
def celery_worker_process(
    base_url: str, data_dir: str, *, pool: str = "solo", concurrency: int | None = None, **env: str
) -> Iterator[subprocess.Popen]:
    """Start `celery worker --pool=<pool>` pointed at the fake LLM at `base_url`; stop it at the end.
    The queue is purged before and after: a test never runs another test's tasks.

    The worker's log (level warning) goes to `proc.log_path` (see `worker_log`), so a test can
    assert it holds no traceback. The worker runs in its own process group, so a prefork pool's
    children are stopped with it."""
    require(bool(settings.CONFIG.redis_url), "Redis (REDIS_URL) for the Celery executor")
    full_env = child_env(
        REDIS_URL=settings.CONFIG.redis_url,
        ONGRID_LLM="openai",
        OPENAI_API_KEY="test-key",
        OPENAI_BASE_URL=base_url,
        ONGRID_MODEL="fake-model",
        ONGRID_LLM_MAX_RETRIES="0",
        ONGRID_DATA_DIR=data_dir,
        **env,
    )
    name = f"test-{time.monotonic_ns()}@{socket.gethostname()}"
    command = [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "ongrid_site",
        "worker",
        f"--pool={pool}",
        "-l",
        "warning",
    ]
    if concurrency is not None:
        command += ["--concurrency", str(concurrency)]
    command += ["--without-gossip", "--without-mingle", "-n", name]
    _purge_stale_tasks()
    log_path = Path(data_dir) / f"celery-worker-{time.monotonic_ns()}.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen(
            command, cwd=ROOT, env=full_env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    proc.log_path = log_path  # type: ignore[attr-defined]
    proc.celery_name = name  # type: ignore[attr-defined]
    try:
        _wait_until_ready(proc, name)
        yield proc
    finally:
        _stop(proc)
        _purge_stale_tasks()  # nor does the next test get what this one queued and did not run


def _purge_stale_tasks() -> None:
    """Tasks an earlier test queued for a worker it then killed (their rows are gone with that
    test's data) are not this test's: a worker would run them and log their failure."""
    from ongrid_site.celery import app

    app.control.purge()


def worker_log(proc: subprocess.Popen) -> str:
    """Everything the worker has logged so far."""
    return proc.log_path.read_text(errors="replace")  # type: ignore[attr-defined]


def identity_of(proc: subprocess.Popen) -> str:
    """The owner string a session row carries while this (solo-pool) worker runs it."""
    return f"{socket.gethostname()}:{proc.pid}"


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
    # A prefork child left behind by a killed parent goes with its group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _wait_until_ready(proc: subprocess.Popen, name: str, timeout: float = 60.0) -> None:
    from ongrid_site.celery import app

    deadline = time.monotonic() + timeout
    while not app.control.ping(destination=[name], timeout=0.5):
        if proc.poll() is not None:
            pytest.fail(f"celery worker exited: {worker_log(proc)[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"celery worker did not answer a ping in time: {worker_log(proc)[-2000:]}")


class HeldModel:
    """A fake-LLM route that holds every request open until `release()`, counting how many are
    open at once: the proof that turns really run concurrently."""

    def __init__(self, expected: int, reply: Reply | None = None) -> None:
        self.expected = expected
        self.reply = reply or text("done")
        self.open = 0
        self.peak = 0
        self.served = 0
        self._lock = threading.Lock()
        self._all_in = threading.Event()
        self._release = threading.Event()

    def __call__(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.open += 1
            self.peak = max(self.peak, self.open)
            if self.open >= self.expected:
                self._all_in.set()
        self._release.wait(timeout=120)
        with self._lock:
            self.open -= 1
            self.served += 1
        return self.reply

    def wait_all_in(self, timeout: float = 60.0) -> bool:
        return self._all_in.wait(timeout)

    def release(self) -> None:
        self._release.set()
