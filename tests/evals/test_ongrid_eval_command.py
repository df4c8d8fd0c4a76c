"""`manage.py ongrid_eval` with the offline model: reports that parse, verdicts from the grader
(an easy scenario passes, a cascade fails), and `--baseline` naming a regression."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from evals_app.models import EvalRun

pytestmark = pytest.mark.django_db(transaction=True)


def _run(tmp_path, name: str, *extra: str, out: StringIO | None = None) -> tuple[dict, str]:
    out = out or StringIO()
    target = tmp_path / name
    call_command(
        "ongrid_eval", "--model", "offline", "--only", "disk-full-logs", "--only", "noisy-neighbour",
        "--output", str(target), *extra, stdout=out, stderr=StringIO(),
    )  # fmt: skip
    return json.loads((target / "results.json").read_text()), out.getvalue()


def test_offline_run_writes_json_and_junit_and_compares_with_a_baseline(tmp_path):
    document, printed = _run(tmp_path, "first")
    verdicts = {r["scenario"]: r["passed"] for r in document["results"]}
    assert verdicts == {"disk-full-logs": True, "noisy-neighbour": False}
    assert document["model"] == "offline"
    assert document["summary"]["categories"]["disk"] == {"runs": 1, "passed": 1, "rate": 1.0, "macro_f1": 0.0}
    failed = next(r for r in document["results"] if r["scenario"] == "noisy-neighbour")
    assert "patient_zero" in failed["failed_checks"]
    assert re.search(r"disk-full-logs +PASS", printed) and re.search(r"noisy-neighbour +FAIL", printed)
    assert re.search(r"overall +1/2 +50.0 % +F1 0.00", printed)

    stored = EvalRun.objects.get()  # each run is stored for the leaderboard
    assert (stored.model, stored.runs, stored.passed, stored.pass_rate) == ("offline", 2, 1, 0.5)
    assert f"stored:  run #{stored.pk}" in printed and len(stored.suite_version) == 12
    assert sorted(stored.results.values_list("scenario", "passed")) == [
        ("disk-full-logs", True),
        ("noisy-neighbour", False),
    ]

    suites = ET.parse(tmp_path / "first" / "junit.xml").getroot()
    cases = {case.get("name"): case for case in suites.iter("testcase")}
    assert set(cases) == {"disk-full-logs", "noisy-neighbour"}
    assert cases["noisy-neighbour"].find("failure") is not None
    assert cases["disk-full-logs"].find("failure") is None

    # A baseline in which the cascade passed: this run is a regression on it.
    for result in document["results"]:
        result["passed"], result["score"] = True, 1.0
    document["summary"]["overall"]["rate"] = 1.0
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(document))
    # The regression gate: the command fails, naming the scenario, after writing its reports.
    out = StringIO()
    with pytest.raises(CommandError, match=r"Regression against the baseline .*: noisy-neighbour$"):
        _run(tmp_path, "second", "--baseline", str(baseline), out=out)
    again, printed = json.loads((tmp_path / "second" / "results.json").read_text()), out.getvalue()
    assert [w["scenario"] for w in again["comparison"]["worse"]] == ["noisy-neighbour"]
    assert again["comparison"]["regressions"] == [
        {"scenario": "noisy-neighbour", "reasons": ["passed 100% → 0%"]}
    ]
    assert again["comparison"]["overall"] == [1.0, 0.5]
    assert "worse  noisy-neighbour: passed 100% → 0%" in printed
    assert "REGRESSION noisy-neighbour: passed 100% → 0%" in printed


def test_the_whole_suite_with_the_offline_model_matches_its_committed_baseline(tmp_path):
    """Every scenario, hermetic and fast: the grader's verdicts for the offline model are the ones
    docs/evals.md publishes (a change to the grader, a scenario or the offline model shows here)."""
    baseline = Path(settings.BASE_DIR) / "evals" / "baselines" / "offline.json"
    out = StringIO()
    call_command(
        "ongrid_eval", "--model", "offline", "--output", str(tmp_path / "all"),
        "--baseline", str(baseline), stdout=out, stderr=StringIO(),
    )  # fmt: skip
    document = json.loads((tmp_path / "all" / "results.json").read_text())
    expected = {r["scenario"]: r["passed"] for r in json.loads(baseline.read_text())["results"]}
    assert {r["scenario"]: r["passed"] for r in document["results"]} == expected
    assert len(expected) >= 24 and len({r["category"] for r in document["results"]}) >= 8
    trivial = [r for r in document["results"] if r["difficulty"] in ("easy", "trivial")]
    hard = [r for r in document["results"] if r["difficulty"] == "hard"]
    assert trivial and all(r["passed"] for r in trivial)  # the suite tells models apart:
    # The stand-in passes the easy and fails most of the hard: it lists what its tools returned, which
    # names the culprit only where one lookup finds it (config-change-pool: the change events).
    assert hard and sum(r["passed"] for r in hard) < len(hard) / 2
    assert document["comparison"]["worse"] == [] and document["comparison"]["better"] == []
