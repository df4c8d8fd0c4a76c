"""A malformed scenario file is refused before anything runs, with an error that names the file and
the key at fault (so a typo cannot silently weaken a check)."""

from __future__ import annotations

import textwrap
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evals_app.runner import known_tools
from evals_app.scenarios import SCENARIOS_DIR, ScenarioError, load_scenario, load_suite

GOOD = """\
    name: {name}
    category: disk
    question: The disk on web-01 is full. What is filling it?
    expected:
      patient_zero: [web-01]
      tool_budget: 5
"""


def _write(directory: Path, name: str, body: str) -> Path:
    path = directory / name / "scenario.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(textwrap.dedent(body).replace("{name}", name))
    return path


@pytest.mark.parametrize(
    ("replace", "by", "named"),
    [
        ("tool_budget: 5", "tool_budgett: 5", "expected: unknown key(s) tool_budgett"),
        ("tool_budget: 5", "tool_budget: plenty", "expected.tool_budget must be a whole number"),
        ("question: The disk on web-01", "question: ''\n    x: The disk on web-01", "unknown key(s) x"),
        ("question: The disk on web-01 is full. What is filling it?", "question: ''", "`question` is"),
        ("patient_zero: [web-01]", "patient_zero: {host: web-01}", "expected.patient_zero must be text"),
        ("tool_budget: 5", "tool_budget: 5\n    conversation: hello", "`conversation` must be a list"),
        (
            "tool_budget: 5",
            "tool_budget: 5\n    conversation:\n    - {user: hi}",
            "conversation[0] needs `user` and `assistant` text",
        ),
        (
            "tool_budget: 5",
            "tool_budget: 5\n    conversation:\n    - {user: hi, assistant: hello, system: x}",
            "conversation[0]: unknown key(s) system",
        ),
        (
            "tool_budget: 5",
            "tool_budget: 5\n      proposes: k8s_rollout_undo",
            "expected.proposes must be a mapping",
        ),
        ("tool_budget: 5", "tool_budget: 5\n      proposes: {arguments: {}}", "mapping with a `tool` name"),
        (
            "tool_budget: 5",
            "tool_budget: 5\n      proposes: {tool: k8s_scale, args: {}}",
            "unknown key(s) args",
        ),
        (
            "tool_budget: 5",
            "tool_budget: 5\n      proposes: {tool: k8s_scale, arguments: [checkout]}",
            "expected.proposes.arguments must be a mapping",
        ),
    ],
)
def test_a_malformed_key_is_refused_naming_the_file_and_the_key(tmp_path, replace, by, named):
    path = _write(tmp_path, "broken", GOOD.replace(replace, by))
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    assert str(refused.value).startswith(f"{path}: ")
    assert named in str(refused.value)


def test_a_recording_with_an_unknown_matcher_names_its_index(tmp_path):
    body = GOOD + "    recordings:\n      - {tool: query_promql, match: fuzzy, output: {}}\n"
    path = _write(tmp_path, "broken", body)
    with pytest.raises(ScenarioError, match=r"broken/scenario.yaml: recordings\[0\]: match must be one of"):
        load_scenario(path)


def test_invalid_yaml_is_refused_naming_the_file(tmp_path):
    path = _write(tmp_path, "broken", "name: [unclosed\n")
    with pytest.raises(ScenarioError, match=r"broken/scenario.yaml: not valid YAML"):
        load_scenario(path)


def test_the_command_refuses_the_suite_and_runs_nothing(tmp_path):
    _write(tmp_path, "fine", GOOD)
    broken = _write(tmp_path, "broken", GOOD.replace("category: disk", "category: disk\n    severity: high"))
    output = tmp_path / "out"
    with pytest.raises(CommandError) as refused:
        call_command("ongrid_eval", "--scenarios", str(tmp_path), "--output", str(output), stdout=StringIO())
    assert str(refused.value) == f"{broken}: scenario: unknown key(s) severity"
    assert not output.exists()


def test_every_shipped_scenario_loads():
    scenarios = load_suite(SCENARIOS_DIR)
    assert len(scenarios) >= 24
    assert len({s.category for s in scenarios}) >= 8


def test_every_tool_a_shipped_scenario_names_exists():
    """A recording, a forbidden tool or an expected write under a misspelt name would never match
    a call, silently weakening the scenario (its check passes for every model)."""
    tools = known_tools()
    for scenario in load_suite(SCENARIOS_DIR):
        named = {r.tool for r in scenario.recordings} | set(scenario.expected.forbidden_tools)
        if scenario.expected.proposes is not None:
            named.add(scenario.expected.proposes.tool)
        assert named <= tools, f"{scenario.name}: unknown {sorted(named - tools)}"
