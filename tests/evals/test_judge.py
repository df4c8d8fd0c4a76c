"""The LLM judge, played by a fake OpenAI-compatible server: its verdict and reason land in
results.json (and a "fail" fails a run the deterministic checks passed); a judge that cannot be
asked leaves the deterministic verdict alone and records why it was not heard."""

from __future__ import annotations

import dataclasses
import json
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command

from evals_app.judge import RUBRIC_PATH
from fakes.openai_server import error, text

pytestmark = pytest.mark.django_db(transaction=True)

SCENARIO = "disk-full-logs"  # the offline model passes every deterministic check of this one


@pytest.fixture(autouse=True)
def restore_config(monkeypatch):
    """The command points settings.CONFIG at the model under test; put it back afterwards."""
    monkeypatch.setattr(settings, "CONFIG", settings.CONFIG)


def _run(tmp_path, *extra: str) -> dict:
    target = tmp_path / "run"
    call_command(
        "ongrid_eval", "--model", "offline", "--only", SCENARIO, "--output", str(target), *extra,
        stdout=StringIO(), stderr=StringIO(),
    )  # fmt: skip
    return json.loads((target / "results.json").read_text())["results"][0] | {
        "_junit": (target / "junit.xml").read_text()
    }


def test_a_pass_verdict_is_stored_with_its_reason_and_model(tmp_path, fake_llm):
    fake_llm.script(text('{"verdict": "pass", "reason": "Names debug logs filling /var on web-01."}'))
    result = _run(tmp_path, "--judge-model", "judge-small", "--judge-base-url", fake_llm.base_url)
    assert result["judge"] == {
        "verdict": "pass",
        "reason": "Names debug logs filling /var on web-01.",
        "model": "judge-small",
    }
    assert result["passed"] is True and result["score"] == 1.0
    asked = fake_llm.chat_requests[-1]
    assert asked.body["model"] == "judge-small"
    assert asked.system_prompt == RUBRIC_PATH.read_text(encoding="utf-8")
    case = asked.messages[-1]["content"]
    assert "Expected root cause:" in case and "web-01" in case
    assert result["answer"][:40] in case  # the judge grades the answer the run gave


def test_a_fail_verdict_fails_the_run_and_its_reason_is_kept(tmp_path, fake_llm, monkeypatch):
    # Configured through the settings (ONGRID_EVAL_JUDGE_*), not flags.
    monkeypatch.setattr(
        settings,
        "CONFIG",
        dataclasses.replace(
            settings.CONFIG, eval_judge_model="judge-env", eval_judge_base_url=fake_llm.base_url
        ),
    )
    reason = "Lists large files but never says debug logging filled /var."
    fake_llm.script(text(f'Here is my verdict: {{"verdict": "fail", "reason": "{reason}"}}'))
    result = _run(tmp_path)
    assert result["judge"] == {"verdict": "fail", "reason": reason, "model": "judge-env"}
    assert result["failed_checks"] == []  # every deterministic check passed…
    assert result["passed"] is False  # …but the judge's fail decides
    assert result["score"] == round(len(result["checks"]) / (len(result["checks"]) + 1), 3)
    assert f"judge: {reason}" in result["_junit"]
    assert fake_llm.chat_requests[-1].body["model"] == "judge-env"


def test_a_judge_that_errors_leaves_the_deterministic_verdict_and_records_the_error(tmp_path, fake_llm):
    fake_llm.script(error(401, "Incorrect API key provided"))
    result = _run(tmp_path, "--judge-model", "judge-small", "--judge-base-url", fake_llm.base_url)
    assert result["judge"]["verdict"] == "error"
    assert result["judge"]["error"].startswith("the judge could not be asked")
    assert result["judge"]["model"] == "judge-small"
    assert result["passed"] is True and result["score"] == 1.0
    assert "<failure" not in result["_junit"]
