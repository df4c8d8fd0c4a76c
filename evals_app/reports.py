"""What a run leaves behind: the table and per-category pass rates on screen, `results.json` and
`junit.xml` under `var/evals/<timestamp>/`, and the comparison with a baseline run."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from evals_app.runner import RunResult

FORMAT_VERSION = 1


def macro_f1(results: list[RunResult]) -> float | None:
    """The mean of the investigator's F1 over the runs that have one (None: no run has one)."""
    scores = [r.entities["f1"] for r in results if r.entities is not None]
    return round(sum(scores) / len(scores), 3) if scores else None


def judge_agreement(results: list[RunResult]) -> dict | None:
    """How often the judge and the entity extraction reach the same verdict (None: no judge ran)."""
    judged = [r.judge_agrees for r in results if r.judge_agrees is not None]
    if not judged:
        return None
    return {"judged": len(judged), "agreed": sum(judged), "rate": round(sum(judged) / len(judged), 3)}


def pass_rates(results: list[RunResult]) -> dict:
    """{"overall": {...}, "categories": {category: {"runs", "passed", "rate", "macro_f1"}}}, and the
    judge's agreement with the entity extraction when a judge ran."""
    by_category: dict[str, list[RunResult]] = defaultdict(list)
    for result in results:
        by_category[result.category].append(result)

    def rate(group: list[RunResult]) -> dict:
        passed = sum(r.passed for r in group)
        return {
            "runs": len(group),
            "passed": passed,
            "rate": round(passed / len(group), 3) if group else 0.0,
            "macro_f1": macro_f1(group),
        }

    summary = {"overall": rate(results), "categories": {c: rate(g) for c, g in sorted(by_category.items())}}
    agreement = judge_agreement(results)
    if agreement is not None:
        summary["judge_agreement"] = agreement
    return summary


def as_document(results: list[RunResult], meta: dict) -> dict:
    return {
        "format": FORMAT_VERSION,
        **meta,
        "summary": pass_rates(results),
        "results": [r.as_dict() for r in results],
    }


def write_json(document: dict, directory: Path, path: Path | None = None) -> Path:
    path = path or directory / "results.json"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_junit(
    results: list[RunResult], directory: Path, name: str = "ongrid-evals", path: Path | None = None
) -> Path:
    """One <testsuite> per category, one <testcase> per run; failed checks are the failure text."""
    root = ET.Element("testsuites", name=name, tests=str(len(results)))
    by_category: dict[str, list[RunResult]] = defaultdict(list)
    for result in results:
        by_category[result.category].append(result)
    failures_total = 0
    for category, group in sorted(by_category.items()):
        failures = sum(not r.passed for r in group)
        failures_total += failures
        suite = ET.SubElement(
            root,
            "testsuite",
            name=category,
            tests=str(len(group)),
            failures=str(failures),
            time=f"{sum(r.latency_s for r in group):.3f}",
        )
        for result in group:
            case = ET.SubElement(
                suite,
                "testcase",
                classname=f"evals.{category}",
                name=result.scenario if result.attempt == 1 else f"{result.scenario}#{result.attempt}",
                time=f"{result.latency_s:.3f}",
            )
            if not result.passed:
                failure = ET.SubElement(case, "failure", message=", ".join(result.failed_checks) or "failed")
                failure.text = "\n".join(f"{c.name}: {c.detail}" for c in result.checks if not c.passed)
                if result.judge and result.judge.get("verdict") == "fail":
                    failure.text += f"\njudge: {result.judge.get('reason', '')}"
    root.set("failures", str(failures_total))
    path = path or directory / "junit.xml"
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path


def _cost(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def table(results: list[RunResult]) -> str:
    """The per-run table: scenario, pass, checks failed, tool calls, tokens, latency, cost."""
    header = ("scenario", "pass", "F1", "checks failed", "tools", "tokens", "latency", "cost")
    rows = [
        (
            r.scenario if r.attempt == 1 else f"{r.scenario}#{r.attempt}",
            "PASS" if r.passed else "FAIL",
            _f1(r.entities["f1"] if r.entities else None),
            ", ".join(r.failed_checks) or "-",
            str(r.tool_calls),
            str(r.tokens),
            f"{r.latency_s:.1f}s",
            _cost(r.cost_usd),
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _f1(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def rates_text(summary: dict) -> str:
    """Pass rate and investigator macro-F1 per category, then overall (and the judge's agreement)."""
    rows = [*summary["categories"].items(), ("overall", summary["overall"])]
    lines = [
        f"{name:<16} {f['passed']}/{f['runs']}  {f['rate'] * 100:5.1f} %  F1 {_f1(f.get('macro_f1'))}"
        for name, f in rows
    ]
    agreement = summary.get("judge_agreement")
    if agreement:
        lines.append(
            f"judge agrees with the entity extraction on {agreement['agreed']}/{agreement['judged']}"
            f" ({agreement['rate'] * 100:.1f} %)"
        )
    return "\n".join(lines)


def _per_scenario(document: dict) -> dict[str, tuple[float, float]]:
    """scenario -> (share of its runs that passed, mean score)."""
    runs: dict[str, list[dict]] = defaultdict(list)
    for result in document.get("results", []):
        runs[result["scenario"]].append(result)
    return {
        name: (
            sum(bool(r["passed"]) for r in group) / len(group),
            sum(float(r.get("score", 0)) for r in group) / len(group),
        )
        for name, group in runs.items()
    }


def _f1_per_scenario(document: dict) -> dict[str, float]:
    """scenario -> mean investigator F1 of its runs (scenarios without entities left out)."""
    scores: dict[str, list[float]] = defaultdict(list)
    for result in document.get("results", []):
        if result.get("entities"):
            scores[result["scenario"]].append(float(result["entities"]["f1"]))
    return {name: round(sum(group) / len(group), 3) for name, group in scores.items()}


def regressions(current: dict, baseline: dict) -> list[dict]:
    """The scenarios the regression gate fails on: fewer of their runs passed than in the
    baseline, or their F1 fell. A lower partial score alone is not one (it shows as "worse")."""
    now, before = _per_scenario(current), _per_scenario(baseline)
    f1_now, f1_before = _f1_per_scenario(current), _f1_per_scenario(baseline)
    found = []
    for name in sorted(set(now) & set(before)):
        reasons = []
        if now[name][0] < before[name][0]:
            reasons.append(f"passed {before[name][0]:.0%} → {now[name][0]:.0%}")
        if name in f1_before and f1_now.get(name, 0.0) < f1_before[name] - 1e-9:
            reasons.append(f"F1 {f1_before[name]:.2f} → {f1_now.get(name, 0.0):.2f}")
        if reasons:
            found.append({"scenario": name, "reasons": reasons})
    return found


def compare(current: dict, baseline: dict) -> dict:
    """What got better or worse since `baseline` (both are results.json documents)."""
    now, before = _per_scenario(current), _per_scenario(baseline)
    better, worse = [], []
    for name in sorted(set(now) & set(before)):
        (rate, score), (old_rate, old_score) = now[name], before[name]
        change = {
            "scenario": name,
            "pass_rate": [old_rate, rate],
            "score": [round(old_score, 3), round(score, 3)],
        }
        if (rate, score) > (old_rate, old_score):
            better.append(change)
        elif (rate, score) < (old_rate, old_score):
            worse.append(change)
    old_overall = baseline.get("summary", {}).get("overall", {}).get("rate", 0.0)
    new_overall = current.get("summary", {}).get("overall", {}).get("rate", 0.0)
    return {
        "baseline_model": baseline.get("model", ""),
        "overall": [old_overall, new_overall],
        "better": better,
        "worse": worse,
        "new": sorted(set(now) - set(before)),
        "missing": sorted(set(before) - set(now)),
        "regressions": regressions(current, baseline),
    }


def comparison_text(comparison: dict) -> str:
    old, new = comparison["overall"]
    model = comparison["baseline_model"]
    lines = [f"pass rate {old * 100:.1f} % → {new * 100:.1f} % (baseline model: {model})"]
    for label in ("better", "worse"):
        for change in comparison[label]:
            (r0, r1), (s0, s1) = change["pass_rate"], change["score"]
            lines.append(f"  {label:<6} {change['scenario']}: passed {r0:.0%} → {r1:.0%}, score {s0} → {s1}")
    if comparison["new"]:
        lines.append(f"  new     {', '.join(comparison['new'])}")
    if comparison["missing"]:
        lines.append(f"  missing {', '.join(comparison['missing'])}")
    if not comparison["better"] and not comparison["worse"]:
        lines.append("  no scenario changed")
    for regression in comparison.get("regressions", []):
        lines.append(f"  REGRESSION {regression['scenario']}: {'; '.join(regression['reasons'])}")
    return "\n".join(lines)
