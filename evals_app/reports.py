"""What a run leaves behind: the table and per-category pass rates on screen, `results.json` and
`junit.xml` under `var/evals/<timestamp>/`, and the comparison with a baseline run."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from evals_app.runner import RunResult

FORMAT_VERSION = 1


def pass_rates(results: list[RunResult]) -> dict:
    """{"overall": {...}, "categories": {category: {"runs", "passed", "rate"}}}."""
    by_category: dict[str, list[RunResult]] = defaultdict(list)
    for result in results:
        by_category[result.category].append(result)

    def rate(group: list[RunResult]) -> dict:
        passed = sum(r.passed for r in group)
        return {"runs": len(group), "passed": passed, "rate": round(passed / len(group), 3) if group else 0.0}

    return {"overall": rate(results), "categories": {c: rate(g) for c, g in sorted(by_category.items())}}


def as_document(results: list[RunResult], meta: dict) -> dict:
    return {
        "format": FORMAT_VERSION,
        **meta,
        "summary": pass_rates(results),
        "results": [r.as_dict() for r in results],
    }


def write_json(document: dict, directory: Path) -> Path:
    path = directory / "results.json"
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def write_junit(results: list[RunResult], directory: Path, name: str = "ongrid-evals") -> Path:
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
    path = directory / "junit.xml"
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
    return path


def _cost(value: float | None) -> str:
    return "-" if value is None else f"${value:.4f}"


def table(results: list[RunResult]) -> str:
    """The per-run table: scenario, pass, checks failed, tool calls, tokens, latency, cost."""
    header = ("scenario", "pass", "checks failed", "tools", "tokens", "latency", "cost")
    rows = [
        (
            r.scenario if r.attempt == 1 else f"{r.scenario}#{r.attempt}",
            "PASS" if r.passed else "FAIL",
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


def rates_text(summary: dict) -> str:
    lines = []
    for category, figures in summary["categories"].items():
        lines.append(f"{category:<16} {figures['passed']}/{figures['runs']}  {figures['rate'] * 100:5.1f} %")
    overall = summary["overall"]
    lines.append(f"{'overall':<16} {overall['passed']}/{overall['runs']}  {overall['rate'] * 100:5.1f} %")
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
    return "\n".join(lines)
