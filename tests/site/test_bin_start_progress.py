"""`bin/start` says what it is doing: each step is announced before it runs, and pip's own output
is shown (never `--quiet`), so a first run's minute of installing does not look like a hang
(issue 29, finding 17). It stays idempotent: a second run installs nothing.

The script runs for real in a copy of `bin/` and the requirements, with stand-ins for the
virtualenv's programs (python, pip, daphne) that log how they were called and print what the real
ones would: nothing here installs a package or starts a server."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

STANDINS = {
    "pip": 'echo "pip $*" >> "$CALLS"\necho "Collecting Django==5.2"\necho "Successfully installed Django"\n',
    "python": (
        'echo "python $*" >> "$CALLS"\n'
        'case "$*" in\n'
        '  *secrets*) echo "k3y-of-the-stand-in-python-that-is-long-enough-for-django-0123456789" ;;\n'
        '  *ongrid_bootstrap*) echo "Log in at http://127.0.0.1:8000/ as admin / s3cret" ;;\n'
        '  *migrate*) echo "Applying ops_app.0001_initial... OK" ;;\n'
        "esac\n"
    ),
    "daphne": 'echo "daphne $*" >> "$CALLS"\necho "daphne serving"\n',
}


def a_checkout(tmp_path: Path) -> Path:
    tree = tmp_path / "ongrid"
    shutil.copytree(ROOT / "bin", tree / "bin")
    for name in ("requirements.txt", "requirements-dev.txt"):
        shutil.copy(ROOT / name, tree / name)
    venv = tree / ".venv" / "bin"
    venv.mkdir(parents=True)
    for name, body in STANDINS.items():
        (venv / name).write_text("#!/bin/sh\n" + body)
        (venv / name).chmod(0o755)
    return tree


def start(tree: Path) -> list[str]:
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tree),
        "CALLS": str(tree / "calls.log"),
        "ONGRID_DATA_DIR": str(tree / "var"),
    }
    done = subprocess.run(
        ["bash", "bin/start"], cwd=tree, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout.splitlines()


def position(lines: list[str], start_of_line: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(start_of_line))


def test_each_step_is_announced_before_it_runs_and_pip_shows_its_progress(tmp_path):
    tree = a_checkout(tmp_path)
    lines = start(tree)
    order = [
        position(lines, "==> [1/5] Python packages"),
        position(lines, "Installing Python packages from requirements.txt"),
        position(lines, "Collecting Django"),  # pip's own output reaches the terminal
        position(lines, "==> [2/5] Translations"),
        position(lines, "==> [3/5] Database (SQLite in "),
        position(lines, "Applying ops_app.0001_initial"),
        position(lines, "==> [4/5] Demo organization and admin user"),
        position(lines, "Log in at http://127.0.0.1:8000/ as admin / "),  # what the CI smoke test greps
        position(lines, "==> [5/5] Starting Ongrid on http://127.0.0.1:8000/"),
        position(lines, "daphne serving"),
    ]
    assert order == sorted(order), lines
    (pip,) = [c for c in (tree / "calls.log").read_text().splitlines() if c.startswith("pip ")]
    assert "--quiet" not in pip.split() and "-q" not in pip.split()


def test_a_second_start_installs_nothing_and_still_says_so(tmp_path):
    tree = a_checkout(tmp_path)
    start(tree)
    key = (tree / "var" / "secret-key").read_text()
    again = start(tree)
    pips = [c for c in (tree / "calls.log").read_text().splitlines() if c.startswith("pip ")]
    assert len(pips) == 1  # only the first run installed
    assert "Python packages are up to date (requirements.txt)." in again
    assert (tree / "var" / "secret-key").read_text() == key  # sessions survive a restart
    assert any(line.startswith("==> [5/5] Starting Ongrid") for line in again)
