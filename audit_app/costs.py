"""Cost estimates for LLM usage, from the per-model price table in settings.

Estimates, not invoices: list prices per million tokens (`ONGRID_MODEL_PRICES`), matched on the
model name the provider reported. Dated snapshots ("gpt-4o-mini-2024-07-18") match their family
by the longest priced prefix. A model with no price is named in `unpriced` rather than costed at
zero, so an auditor never mistakes "unknown" for "free".
"""

from __future__ import annotations

from django.conf import settings


def price_of(model: str) -> dict | None:
    prices = settings.CONFIG.model_prices
    if model in prices:
        return prices[model]
    families = [name for name in prices if model.startswith(name)]
    return prices[max(families, key=len)] if families else None


def estimate_cost(by_model: dict[str, dict[str, int]]) -> dict:
    """{"usd": total or None, "unpriced": [models]} for {model: {"prompt": n, "completion": n}}.

    The key "" stands for usage recorded without a model name: the deployment's default model.
    """
    total = 0.0
    unpriced = []
    for model, used in by_model.items():
        name = model or settings.CONFIG.model
        price = price_of(name)
        if price is None:
            unpriced.append(name)
            continue
        total += (used["prompt"] * price["input"] + used["completion"] * price["output"]) / 1_000_000
    priced_any = len(unpriced) < len(by_model)
    return {"usd": round(total, 6) if priced_any or not by_model else None, "unpriced": sorted(set(unpriced))}
