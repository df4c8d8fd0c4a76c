"""docs/architecture.md and the import-linter contracts describe the code as it is."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()


def layers() -> list[str]:
    """The packages of the layers contract, top down; independent siblings ("a | b") in order."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [contract] = [c for c in config["contracts"] if c["type"] == "layers"]
    # "a | b" is a layer of independent siblings (neither may import the other).
    return [name.strip() for layer in contract["layers"] for name in layer.split("|")]


def test_the_diagram_lists_the_contracts_layers_top_down():
    drawn = re.findall(r"^  ([a-z_]+)\s{2,}", DOC.split("```")[1], flags=re.M)
    assert drawn == layers()


def test_every_module_the_doc_names_exists():
    named = set(re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)(?::[a-z_]+)?`", DOC))
    assert named, "the doc names no module"
    missing = sorted(path for path in named if not (ROOT / path).is_file())
    assert missing == []


def test_an_upward_import_breaks_the_layers_contract(tmp_path):
    """A copy of the tree with one upward import (the store importing a surface) fails lint-imports."""
    copy = tmp_path / "house"
    for name in (*layers(), "fakes", "bench", "tests"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    lint = [str(Path(sys.executable).with_name("lint-imports"))]
    clean = subprocess.run(lint, cwd=copy, capture_output=True, text=True, env={"PYTHONPATH": str(copy)})
    assert clean.returncode == 0, clean.stdout + clean.stderr
    services = copy / "chat_app" / "services.py"
    services.write_text(services.read_text() + "\nfrom web_app import tree  # noqa: E402,F401\n")
    broken = subprocess.run(lint, cwd=copy, capture_output=True, text=True, env={"PYTHONPATH": str(copy)})
    assert broken.returncode != 0
    assert "chat_app.services -> web_app.tree" in broken.stdout
