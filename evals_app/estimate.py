"""What a run will spend, said before it starts: tokens per scenario from a reference run, priced
with the deployment's table (`ONGRID_MODEL_PRICES`, audit_app/costs.py).

A suite against a paid endpoint can cost real money; the estimate lets whoever starts it stop
before the first call. The reference is the run given with `--baseline` (ideally an earlier run of
the same model) or else the committed offline baseline, whose token counts are those of the
requests the agents build (prompts, catalog, tool schemas), the bulk of any model's bill. A
scenario the reference lacks counts at the reference's mean.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from audit_app.costs import estimate_cost
from evals_app.scenarios import SUITE_DIR, Scenario

OFFLINE_BASELINE = SUITE_DIR / "baselines" / "offline.json"


@dataclass(frozen=True)
class Estimate:
    runs: int
    prompt_tokens: int
    completion_tokens: int
    usd: float | None  # None: the model has no price in the table
    model: str
    reference: str

    def text(self) -> str:
        tokens = self.prompt_tokens + self.completion_tokens
        head = f"Estimate: {self.runs} run(s), ~{tokens:,} tokens ({self.prompt_tokens:,} in, "
        head += f"{self.completion_tokens:,} out; per {self.reference})"
        if self.model == "offline":
            return f"{head}, no cost (offline model)"
        if self.usd is None:
            return f"{head}; {self.model} has no price in ONGRID_MODEL_PRICES, so no cost estimate"
        return f"{head} ≈ ${self.usd:.2f} at {self.model}'s list price"


def _per_scenario(reference: dict) -> dict[str, tuple[float, float]]:
    """Mean (prompt, completion) tokens per scenario over the reference's attempts; a document
    older than the prompt/completion split counts all its tokens as prompt."""
    attempts: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for result in reference.get("results", []):
        prompt = result.get("prompt_tokens", result.get("tokens", 0)) or 0
        attempts[result["scenario"]].append((prompt, result.get("completion_tokens", 0) or 0))
    return {name: _mean(pairs) for name, pairs in attempts.items()}


def _mean(pairs) -> tuple[float, float]:
    pairs = list(pairs)
    if not pairs:
        return 0.0, 0.0
    return sum(p for p, _ in pairs) / len(pairs), sum(c for _, c in pairs) / len(pairs)


def estimate(
    scenarios: list[Scenario], repeat: int, model: str, reference: dict, reference_name: str | Path
) -> Estimate:
    """The tokens and list-price cost of running `scenarios` `repeat` times with `model`."""
    known = _per_scenario(reference)
    mean = _mean(known.values())
    prompt = completion = 0.0
    for scenario in scenarios:
        p, c = known.get(scenario.name, mean)
        prompt, completion = prompt + p * repeat, completion + c * repeat
    usage = {"prompt": round(prompt), "completion": round(completion)}
    usd = None if model == "offline" else estimate_cost({model: usage})["usd"]
    name = reference_name.name if isinstance(reference_name, Path) else reference_name
    return Estimate(len(scenarios) * repeat, usage["prompt"], usage["completion"], usd, model, name)
