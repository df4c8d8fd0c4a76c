"""A real Celery worker process on the test database and the test's Redis, for scale-out tests."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from django.conf import settings

from fakes.openai_server import RecordedRequest, Reply, text
from tests.support.django_subprocess import ROOT, child_env
from tests.support.required import require


@contextlib.contextmanager
def celery_worker_process(base_url: str, data_dir: str, **env: str) -> Iterator[subprocess.Popen]:
    """Start `celery worker --pool=solo` pointed at the fake LLM at `base_url`; stop it at the end."""
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
    name = f"test-{time.monotonic_ns()}@%h"
    command = [sys.executable, "-m", "celery", "-A", "ongrid_site", "worker", "--pool=solo", "-l", "warning"]
    command += ["--without-gossip", "--without-mingle", "-n", name]
    proc = subprocess.Popen(
        command, cwd=ROOT, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        _wait_until_ready(proc)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def identity_of(proc: subprocess.Popen) -> str:
    """The owner string a session row carries while this (solo-pool) worker runs it."""
    return f"{socket.gethostname()}:{proc.pid}"


def _wait_until_ready(proc: subprocess.Popen, timeout: float = 60.0) -> None:
    from ongrid_site.celery import app

    deadline = time.monotonic() + timeout
    while not app.control.ping(timeout=0.5):
        if proc.poll() is not None:
            pytest.fail(f"celery worker exited: {proc.stderr.read().decode()[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail("celery worker did not answer a ping in time")


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
