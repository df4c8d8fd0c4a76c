"""The linters and validators the deployment tests run, found beside the test interpreter.

They come from requirements-dev.txt (pinned there), so bin/test and CI always have them; a
developer's hand-made venv may not, and then the test is skipped locally but fails under CI=true.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from tests.support.required import require

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def tool(name: str) -> str:
    """The path of the console script `name` installed in this venv (or on PATH)."""
    found = Path(sys.executable).with_name(name)
    path = str(found) if found.exists() else shutil.which(name)
    require(path is not None, f"{name} (pip install -r requirements-dev.txt)")
    return path


def module(name: str):
    """Import `name`, skipping locally and failing in CI when it is not installed."""
    try:
        return __import__(name)
    except ImportError:
        require(False, f"the Python package {name} (pip install -r requirements-dev.txt)")
