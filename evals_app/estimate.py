"""What a run will spend, said before it starts: tokens per scenario from a reference run, priced
with the deployment's table (`ONGRID_MODEL_PRICES`, audit_app/costs.py).

A suite against a paid endpoint can cost real money; the estimate lets whoever starts it stop
before the first call. The reference is the run given with `--baseline` (ideally an earlier run of
the same model) or else the committed offline baseline, whose token counts are those of the
requests the agents build (prompts, catalog, tool schemas), the bulk of any model's bill. A
scenario the reference lacks counts at the reference's mean.
"""

from __future__ import annotations

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
    """Mean (prompt, completion) tokens per scenario over the reference's attempts."""
    sums: dict[str, list[float]] = {}
    for result in reference.get("results", []):
        prompt = result.get("prompt_tokens", result.get("tokens", 0)) or 0
        completion = result.get("completion_tokens", 0) or 0
        entry = sums.setdefault(result["scenario"], [0.0, 0.0, 0])
        entry[0], entry[1], entry[2] = entry[0] + prompt, entry[1] + completion, entry[2] + 1
    return {name: (p / n, c / n) for name, (p, c, n) in sums.items()}


def estimate(
    scenarios: list[Scenario], repeat: int, model: str, reference: dict, reference_name: str | Path
) -> Estimate:
    """The tokens and list-price cost of running `scenarios` `repeat` times with `model`."""
    known = _per_scenario(reference)
    mean = (
        (sum(p for p, _ in known.values()) / len(known), sum(c for _, c in known.values()) / len(known))
        if known
        else (0.0, 0.0)
    )
    prompt = completion = 0.0
    for scenario in scenarios:
        p, c = known.get(scenario.name, mean)
        prompt, completion = prompt + p * repeat, completion + c * repeat
    usage = {"prompt": round(prompt), "completion": round(completion)}
    usd = None if model == "offline" else estimate_cost({model: usage})["usd"]
    name = reference_name.name if isinstance(reference_name, Path) else reference_name
    return Estimate(len(scenarios) * repeat, usage["prompt"], usage["completion"], usd, model, name)
