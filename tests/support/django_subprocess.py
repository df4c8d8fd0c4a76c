"""Run a second Django process against the test database, to check cross-process behaviour.

The test database is the one pytest-django created: a file for SQLite (see
`django_db_modify_db_settings` in conftest.py) or `test_<name>` on PostgreSQL. Rows must be
committed for the other process to see them, so tests using this need
`django_db(transaction=True)`.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

from django.db import connection

from tests.support.egress import LOOPBACK_ALLOWED

ROOT = Path(__file__).resolve().parents[2]


def test_database_url() -> str:
    """A DATABASE_URL naming the database this test process is connected to."""
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        name = str(db["NAME"])
        if name.startswith("file:") or name == ":memory:":
            raise RuntimeError("the SQLite test database is in memory; a subprocess cannot share it")
        return f"sqlite:///{Path(name).resolve()}"
    if db["ENGINE"] == "django.db.backends.postgresql":
        auth = quote(db.get("USER") or "")
        if db.get("PASSWORD"):
            auth += ":" + quote(db["PASSWORD"])
        host = f"{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}"
        return f"postgres://{auth}@{host}/{db['NAME']}"
    raise RuntimeError(f"no subprocess support for {db['ENGINE']}")


def child_env(**extra: str) -> dict[str, str]:
    """Environment for any child process (daphne, a Celery worker, a script) on the test database."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "ongrid_site.settings",
        "SECRET_KEY": os.environ.get("SECRET_KEY") or "subprocess-test-key",
        "DATABASE_URL": test_database_url(),
        "PYTHONPATH": str(ROOT),
        "ONGRID_ALLOW_LOCAL_DEVICE": os.environ.get("ONGRID_ALLOW_LOCAL_DEVICE") or "1",  # as conftest
        "ONGRID_EGRESS_ALLOW": ",".join(LOOPBACK_ALLOWED),  # the fakes on loopback, as conftest
    }
    env.update(extra)
    return env


class DjangoProcess:
    """A long-lived `python -c` Django process that answers one stdin line with one stdout line."""

    def __init__(self, script: str, args: list[str], data_dir: Path):
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "ongrid_site.settings",
            "SECRET_KEY": os.environ.get("SECRET_KEY") or "subprocess-test-key",
            "DATABASE_URL": test_database_url(),
            "ONGRID_DATA_DIR": str(data_dir),
            "PYTHONPATH": str(ROOT),
            "ONGRID_ALLOW_LOCAL_DEVICE": os.environ.get("ONGRID_ALLOW_LOCAL_DEVICE") or "1",
            "ONGRID_EGRESS_ALLOW": ",".join(LOOPBACK_ALLOWED),
        }
        preamble = "import django, sys\ndjango.setup()\n"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", preamble + script, *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self._selector = selectors.DefaultSelector()
        self._selector.register(self.proc.stdout, selectors.EVENT_READ)

    def readline(self, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._selector.select(timeout=max(0.0, deadline - time.monotonic())):
                line = self.proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"subprocess exited: {self.proc.stderr.read()}")
                return line.rstrip("\n")
        raise TimeoutError("no answer from the subprocess")

    def ask(self, line: str, timeout: float = 60.0) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.readline(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._selector.close()
        self.proc.stdout.close()
        self.proc.stderr.close()
