"""The leaderboard: graded runs stored, and compared side by side per category (docs/evals.md).

`store_run` keeps a run's results document as rows (`EvalRun`, `EvalScenarioResult`);
`category_figures` is what the terminal's `--compare` and the admin's comparison page show for
each run: per category and overall, pass rate, macro-F1, cost per scenario and tool calls per
scenario.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit

from django.db import transaction

from evals_app.models import EvalRun, EvalScenarioResult

OVERALL = "overall"


def public_endpoint(url: str | None) -> str:
    """The endpoint as stored and shown: scheme, host, port and path; no user, password or query
    (an endpoint URL may carry a key, which must not reach the leaderboard)."""
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _sum_or_none(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return round(sum(known), 6) if known else None


@transaction.atomic
def store_run(document: dict, *, endpoint: str = "", suite_version: str = "") -> EvalRun:
    """One run's results document (reports.as_document) as rows; returns the run."""
    results = document.get("results", [])
    overall = document.get("summary", {}).get(OVERALL, {})
    run = EvalRun.objects.create(
        model=document.get("model", ""),
        endpoint=public_endpoint(endpoint),
        judge_model=document.get("judge_model", ""),
        started_at=datetime.fromisoformat(document["started_at"]),
        finished_at=datetime.fromisoformat(document["finished_at"]),
        suite_version=suite_version,
        selection=document.get("selection") or [],
        live=bool(document.get("live")),
        repeat=document.get("repeat", 1),
        runs=overall.get("runs", len(results)),
        passed=overall.get("passed", sum(bool(r["passed"]) for r in results)),
        pass_rate=overall.get("rate", 0.0),
        macro_f1=overall.get("macro_f1"),
        tool_calls=sum(r.get("tool_calls", 0) for r in results),
        tokens=sum(r.get("tokens", 0) for r in results),
        cost_usd=_sum_or_none([r.get("cost_usd") for r in results]),
        latency_s=round(sum(r.get("latency_s", 0.0) for r in results), 3),
    )
    EvalScenarioResult.objects.bulk_create(_result_row(run, r) for r in results)
    return run


def _result_row(run: EvalRun, result: dict) -> EvalScenarioResult:
    entities = result.get("entities") or {}
    sessions = result.get("session_ids") or []
    return EvalScenarioResult(
        run=run,
        scenario=result["scenario"],
        category=result["category"],
        difficulty=result.get("difficulty", ""),
        attempt=result.get("attempt", 1),
        passed=bool(result["passed"]),
        score=result.get("score", 0.0),
        failed_checks=result.get("failed_checks") or [],
        precision=entities.get("precision"),
        recall=entities.get("recall"),
        f1=entities.get("f1"),
        tool_calls=result.get("tool_calls", 0),
        tokens=result.get("tokens", 0),
        cost_usd=result.get("cost_usd"),
        latency_s=result.get("latency_s", 0.0),
        session_id=sessions[0] if sessions else None,  # the root session: the chat the turn ran in
        organization=result.get("organization", ""),
        judge_verdict=(result.get("judge") or {}).get("verdict", ""),
    )


def _figures(rows: list[EvalScenarioResult]) -> dict:
    scored = [r.f1 for r in rows if r.f1 is not None]
    costs = [r.cost_usd for r in rows if r.cost_usd is not None]
    return {
        "runs": len(rows),
        "passed": sum(r.passed for r in rows),
        "pass_rate": round(sum(r.passed for r in rows) / len(rows), 3),
        "macro_f1": round(sum(scored) / len(scored), 3) if scored else None,
        "cost_per_scenario": round(sum(costs) / len(costs), 6) if costs else None,
        "tool_calls_per_scenario": round(sum(r.tool_calls for r in rows) / len(rows), 2),
    }


def category_figures(run: EvalRun) -> dict[str, dict]:
    """{category: figures, ..., "overall": figures} for one stored run (categories sorted)."""
    rows = list(run.results.all())
    by_category: dict[str, list[EvalScenarioResult]] = defaultdict(list)
    for row in rows:
        by_category[row.category].append(row)
    figures = {category: _figures(group) for category, group in sorted(by_category.items())}
    if rows:
        figures[OVERALL] = _figures(rows)
    return figures


def comparison(runs: list[EvalRun]) -> dict:
    """The runs' figures side by side: {"runs": [...], "categories": {category: [figures|None]}},
    one entry per run in the order given (None: the run has no scenario of that category)."""
    per_run = [category_figures(run) for run in runs]
    names = sorted({c for figures in per_run for c in figures if c != OVERALL}) + [OVERALL]
    return {
        "runs": [
            {
                "id": r.pk,
                "model": r.model,
                "started_at": r.started_at.isoformat(),
                "suite_version": r.suite_version,
            }
            for r in runs
        ],
        "categories": {name: [figures.get(name) for figures in per_run] for name in names},
    }


def _cell(figures: dict | None) -> str:
    if figures is None:
        return "-"
    f1 = "-" if figures["macro_f1"] is None else f"{figures['macro_f1']:.2f}"
    cost = "-" if figures["cost_per_scenario"] is None else f"${figures['cost_per_scenario']:.4f}"
    return (
        f"{figures['passed']}/{figures['runs']} {figures['pass_rate'] * 100:.0f}% "
        f"F1 {f1} {cost} {figures['tool_calls_per_scenario']:g} calls"
    )


def comparison_text(table: dict) -> str:
    """The terminal's side-by-side table: a row per category, a column per run."""
    header = ["category"] + [f"#{r['id']} {r['model']}" for r in table["runs"]]
    rows = [[name] + [_cell(f) for f in figures] for name, figures in table["categories"].items()]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
