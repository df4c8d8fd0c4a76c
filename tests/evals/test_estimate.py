"""The cost estimate printed before a run starts: tokens per scenario from a reference run (the
baseline, or the committed offline one), priced with the deployment's table."""

from __future__ import annotations

import dataclasses
import json
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command

from evals_app.estimate import estimate
from evals_app.scenarios import Scenario

PRICES = {"gpt-4o-mini": {"input": 0.15, "output": 0.60}}
REFERENCE = {
    "results": [
        {"scenario": "a", "tokens": 0, "prompt_tokens": 100_000, "completion_tokens": 10_000},
        {"scenario": "a", "prompt_tokens": 300_000, "completion_tokens": 30_000},  # mean 200k, 20k
        {"scenario": "b", "tokens": 50_000},  # an older document: all of it counts as prompt
    ]
}


def _scenarios(*names: str) -> list[Scenario]:
    return [Scenario(name=name, category="disk", question="?") for name in names]


@pytest.fixture
def prices():
    saved = settings.CONFIG
    settings.CONFIG = dataclasses.replace(saved, model_prices=PRICES)
    yield
    settings.CONFIG = saved


def test_known_scenarios_count_their_mean_and_new_ones_the_reference_mean(prices):
    # a: 200k in + 20k out, b: 50k in; c is new: the mean of a and b (125k in, 10k out). Twice each.
    found = estimate(_scenarios("a", "b", "c"), 2, "gpt-4o-mini", REFERENCE, "baseline.json")
    assert (found.runs, found.prompt_tokens, found.completion_tokens) == (6, 750_000, 60_000)
    assert found.usd == pytest.approx((750_000 * 0.15 + 60_000 * 0.60) / 1_000_000)
    assert found.text().endswith("≈ $0.15 at gpt-4o-mini's list price")
    assert "~810,000 tokens (750,000 in, 60,000 out; per baseline.json)" in found.text()


def test_a_model_without_a_price_gets_tokens_and_no_invented_cost(prices):
    found = estimate(_scenarios("a"), 1, "llama-3-70b", REFERENCE, "baseline.json")
    assert found.usd is None
    assert "llama-3-70b has no price in ONGRID_MODEL_PRICES" in found.text()
    assert "$" not in found.text()


@pytest.mark.django_db(transaction=True)
def test_the_command_says_the_estimate_before_the_first_scenario_runs(tmp_path):
    def run(*extra: str) -> str:
        err = StringIO()
        call_command(
            "ongrid_eval", "--model", "offline", "--only", "disk-full-logs", "--no-store",
            "--output", str(tmp_path / "out"), *extra, stdout=StringIO(), stderr=err,
        )  # fmt: skip
        return err.getvalue()

    baseline = tmp_path / "mine.json"
    assert "per offline.json), no cost (offline model)" in run("--write-baseline", str(baseline))
    pinned = json.loads(baseline.read_text())
    pinned["results"][0].update(tokens=12_345, prompt_tokens=12_000, completion_tokens=345)
    baseline.write_text(json.dumps(pinned))
    printed = run("--baseline", str(baseline))
    line = "Estimate: 1 run(s), ~12,345 tokens (12,000 in, 345 out; per mine.json), no cost (offline model)"
    assert line in printed and printed.index(line) < printed.index("1/1 disk-full-logs")
