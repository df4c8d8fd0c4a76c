"""The optional LLM judge of a root-cause statement (docs/evals.md, "The judge").

Deterministic checks say whether the right component was named; only a model can say whether the
explanation is the right one. The judge reads the rubric in `evals/judge_rubric.md`, the expected
root cause and the answer, and returns a verdict with its reason; both are stored in the run's
JSON. Its model, endpoint and key are configurable (`--judge-model`, ONGRID_EVAL_JUDGE_*), so a
cheap local model can run the suite and a stronger one can grade it.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass

from django.conf import settings

from agents_app.api import LLMCompletion, LLMError, OpenAIProvider
from evals_app.scenarios import SUITE_DIR, Scenario

RUBRIC_PATH = SUITE_DIR / "judge_rubric.md"


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str
    model: str
    error: str = ""  # the judge could not be asked: no verdict, the deterministic checks decide alone

    def as_dict(self) -> dict:
        if self.error:
            return {"verdict": "error", "reason": "", "model": self.model, "error": self.error}
        return {"verdict": "pass" if self.passed else "fail", "reason": self.reason, "model": self.model}


def judge_provider(model: str, base_url: str | None = None, api_key: str | None = None) -> OpenAIProvider:
    """The judge's endpoint: its own settings first, then the agents' OpenAI-compatible ones."""
    config = settings.CONFIG
    return OpenAIProvider.from_config(
        dataclasses.replace(
            config,
            model=model,
            openai_base_url=base_url or config.eval_judge_base_url or config.openai_base_url,
            openai_api_key=api_key or config.eval_judge_api_key or config.openai_api_key or "none",
        )
    )


def judge_messages(scenario: Scenario, answer: str) -> list[dict]:
    expected = scenario.expected
    case = (
        f"Question:\n{scenario.question}\n\n"
        f"Expected root cause:\n{expected.root_cause or '(not stated)'}\n\n"
        f"Expected patient zero: {', '.join(expected.patient_zero) or '(none)'}\n\n"
        f"Answer to grade:\n{answer or '(no answer)'}"
    )
    return [
        {"role": "system", "content": RUBRIC_PATH.read_text(encoding="utf-8")},
        {"role": "user", "content": case},
    ]


def parse_verdict(text: str, model: str) -> Verdict:
    """The judge's JSON object; anything else is a failed verdict that says why."""
    found = re.search(r"\{.*\}", text, re.DOTALL)
    try:
        data = json.loads(found.group(0)) if found else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("verdict") not in ("pass", "fail"):
        return Verdict(False, f"the judge's reply was not a verdict: {text.strip()[:200]!r}", model)
    return Verdict(data["verdict"] == "pass", str(data.get("reason") or "")[:1000], model)


async def judge(scenario: Scenario, answer: str, provider: OpenAIProvider) -> Verdict:
    model = provider.default_model()
    completion: LLMCompletion | None = None
    try:
        async for event in provider.stream_chat(judge_messages(scenario, answer), [], model=model):
            if isinstance(event, LLMCompletion):
                completion = event
    except LLMError as error:
        # An unreachable or failing judge is not a verdict on the answer: it must not turn a run
        # that passed every check into a failure, nor hide that the judge was not heard.
        return Verdict(False, "", model, error=f"the judge could not be asked: {error.message}")
    return parse_verdict(completion.text if completion else "", model)
