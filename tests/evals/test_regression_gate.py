"""The regression gate: a run compared with a baseline fails when a scenario that passed now fails
or its investigator F1 fell; a lower partial score alone, a new scenario or a better run do not.
A pinned baseline (`--write-baseline`) is accepted by the next identical run."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evals_app.reports import regressions


def _document(*results: tuple[str, bool, float, float | None]) -> dict:
    return {
        "results": [
            {
                "scenario": name,
                "passed": passed,
                "score": score,
                "entities": None if f1 is None else {"f1": f1},
            }
            for name, passed, score, f1 in results
        ]
    }


def test_a_scenario_that_stopped_passing_or_lost_f1_is_a_regression():
    baseline = _document(
        ("a", True, 1.0, 1.0), ("b", False, 0.5, 0.8), ("c", False, 0.8, None), ("d", True, 1.0, 0.5)
    )
    current = _document(
        ("a", False, 0.8, 1.0),  # passed → failed
        ("b", False, 0.5, 0.667),  # same verdict, F1 fell
        ("c", False, 0.6, None),  # only the partial score fell: not a regression
        ("d", True, 1.0, 0.9),  # better
        ("e", False, 0.0, 0.0),  # new: nothing to regress from
    )
    assert regressions(current, baseline) == [
        {"scenario": "a", "reasons": ["passed 100% → 0%"]},
        {"scenario": "b", "reasons": ["F1 0.80 → 0.67"]},
    ]
    assert regressions(baseline, baseline) == []


needs_db = pytest.mark.django_db(transaction=True)


def _eval(tmp_path, name: str, *extra: str) -> str:
    out = StringIO()
    call_command(
        "ongrid_eval", "--model", "offline", "--only", "disk-full-logs", "--output", str(tmp_path / name),
        "--no-store", *extra, stdout=out, stderr=StringIO(),
    )  # fmt: skip
    return out.getvalue()


@needs_db
def test_a_pinned_baseline_passes_the_same_run_and_fails_a_worse_one(tmp_path):
    pinned = tmp_path / "baselines" / "offline-pinned.json"
    pinned.parent.mkdir()
    _eval(tmp_path, "first", "--write-baseline", str(pinned))
    document = json.loads(pinned.read_text())
    assert "comparison" not in document and [r["scenario"] for r in document["results"]] == ["disk-full-logs"]

    printed = _eval(tmp_path, "second", "--baseline", str(pinned))
    assert "no scenario changed" in printed and "REGRESSION" not in printed

    # A baseline in which the investigator named its entities (F1 0.5): this run's 0.0 regresses.
    document["results"][0]["entities"]["f1"] = 0.5
    pinned.write_text(json.dumps(document))
    with pytest.raises(CommandError, match=r"Regression against the baseline .*: disk-full-logs$"):
        _eval(tmp_path, "third", "--baseline", str(pinned))
    written = json.loads((tmp_path / "third" / "results.json").read_text())
    assert written["comparison"]["regressions"] == [
        {"scenario": "disk-full-logs", "reasons": ["F1 0.50 → 0.00"]}
    ]


@needs_db
def test_json_and_junit_go_where_they_are_asked(tmp_path):
    _eval(tmp_path, "run", "--json", str(tmp_path / "out.json"), "--junit", str(tmp_path / "out.xml"))
    assert json.loads((tmp_path / "out.json").read_text())["summary"]["overall"]["runs"] == 1
    assert "<testcase" in (tmp_path / "out.xml").read_text()
