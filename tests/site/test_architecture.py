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


def layers(container: str | None = None) -> list[str]:
    """The packages of a layers contract (the apps', or the one inside `container`), top down;
    independent siblings ("a | b") in order."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [contract] = [
        c for c in config["contracts"] if c["type"] == "layers" and c.get("containers", [None]) == [container]
    ]
    # "a | b" is a layer of independent siblings (neither may import the other).
    return [name.strip() for layer in contract["layers"] for name in layer.split("|")]


def copy_of_the_house(tmp_path: Path) -> Path:
    """The product, fakes, bench and tests copied with the contracts, checked clean first."""
    copy = tmp_path / "house"
    for name in (*layers(), "fakes", "bench", "tests"):
        shutil.copytree(ROOT / name, copy / name, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text())
    clean = lint_imports(copy)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    return copy


def lint_imports(tree: Path) -> subprocess.CompletedProcess:
    lint = [str(Path(sys.executable).with_name("lint-imports"))]
    return subprocess.run(lint, cwd=tree, capture_output=True, text=True, env={"PYTHONPATH": str(tree)})


def add_import(module: Path, statement: str) -> None:
    module.write_text(module.read_text() + f"\n{statement}  # noqa: E402,F401\n")


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
    copy = copy_of_the_house(tmp_path)
    add_import(copy / "chat_app" / "services.py", "from web_app import tree")
    broken = lint_imports(copy)
    assert broken.returncode != 0
    assert "chat_app.services -> web_app.tree" in broken.stdout


def test_inside_agents_the_layers_run_gate_runtime_kernel_tools_then_toolsets():
    assert layers("agents_app") == ["gate", "runtime", "kernel", "tools", "personas", "llm", "toolsets"]


def test_an_upward_import_inside_the_agents_layer_breaks_its_contract(tmp_path):
    """A toolset that reaches up into the runtime (to publish an event, say) fails lint-imports."""
    copy = copy_of_the_house(tmp_path)
    add_import(copy / "agents_app" / "toolsets" / "contract.py", "from agents_app.runtime import publishing")
    broken = lint_imports(copy)
    assert broken.returncode != 0
    assert "agents_app.toolsets.contract -> agents_app.runtime.publishing" in broken.stdout


def test_a_core_helper_importing_the_estate_breaks_the_ops_app_contracts(tmp_path):
    """ops_app.core is the bottom of ops_app: one import of the estate from it fails lint-imports."""
    copy = copy_of_the_house(tmp_path)
    add_import(copy / "ops_app" / "core" / "timeutil.py", "from ops_app.estate import topology")
    broken = lint_imports(copy)
    assert broken.returncode != 0
    assert "ops_app.core.timeutil -> ops_app.estate.topology" in broken.stdout
    assert "Inside ops_app: estate, knowledge and integrations over tenancy over the core helpers BROKEN" in (
        " ".join(broken.stdout.split())
    )
