"""`manage.py ongrid_eval`: run the evaluation suite (docs/evals.md).

Every scenario is one ordinary chat turn in a throwaway organization, graded from its session
tree and audit rows. Prints a table and per-category pass rates, writes results.json and
junit.xml under var/evals/<timestamp>/ (or where --json / --junit say), stores the run for the
leaderboard, and compares with a baseline run when asked: a scenario that regressed on the
baseline fails the command (the regression gate). `--compare RUN RUN` compares stored runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings
from django.core.management.base import CommandError
from django.utils.translation import gettext_lazy as _

from evals_app import leaderboard, reports
from evals_app.estimate import OFFLINE_BASELINE, estimate
from evals_app.judge import judge_provider
from evals_app.models import EvalRun
from evals_app.runner import RunOptions, RunResult, run_suite
from evals_app.scenarios import SCENARIOS_DIR, ScenarioError, load_suite, suite_version
from ops_app.core.commands import LocalizedCommand

BAR_WIDTH = 24


def use_model(model: str | None, base_url: str | None) -> str:
    """Point the agents at `model` for this process; returns the name the report records."""
    config = settings.CONFIG
    if model == "offline" or (model is None and config.llm == "offline" and not base_url):
        settings.CONFIG = dataclasses.replace(config, llm="offline")
        return "offline"
    settings.CONFIG = dataclasses.replace(
        config,
        llm="openai",
        model=model or config.model,
        openai_base_url=base_url or config.openai_base_url,
        # Local servers (Ollama, vLLM) take any key; the SDK insists on one.
        openai_api_key=config.openai_api_key or ("none" if base_url or config.openai_base_url else None),
    )
    if not settings.CONFIG.openai_api_key:
        raise CommandError(
            "No OPENAI_API_KEY (or --base-url of a local server) for a real model; use --model offline."
        )
    return settings.CONFIG.model


def _path(value: str | None) -> Path | None:
    return Path(value) if value else None


class Command(LocalizedCommand):
    help = _("Run the agents' evaluation scenarios and grade them.")

    def add_arguments(self, parser):
        parser.add_argument("--model", help=_("model to evaluate ('offline' for the offline model)"))
        parser.add_argument("--base-url", help=_("OpenAI-compatible endpoint (default OPENAI_BASE_URL)"))
        parser.add_argument(
            "--only", action="append", default=[], help=_("name, category, tag or difficulty")
        )
        parser.add_argument("--repeat", type=int, default=1, help=_("runs per scenario"))
        parser.add_argument("--parallel", type=int, default=1, help=_("scenarios running at once"))
        parser.add_argument("--judge-model", help=_("LLM judge of the root cause (default: none)"))
        parser.add_argument("--judge-base-url", help=_("the judge's endpoint (ONGRID_EVAL_JUDGE_BASE_URL)"))
        parser.add_argument(
            "--baseline", help=_("a previous results.json to compare with; a regression fails the run")
        )
        parser.add_argument("--write-baseline", help=_("also write this run's results.json to FILE"))
        parser.add_argument("--json", help=_("write the results (or the --compare table) as JSON to FILE"))
        parser.add_argument("--junit", help=_("write the JUnit XML report to FILE"))
        parser.add_argument(
            "--compare", nargs="+", type=int, metavar="RUN", help=_("compare stored runs by id and stop")
        )
        parser.add_argument("--no-store", action="store_true", help=_("do not store the run"))
        parser.add_argument("--output", help=_("directory for the reports (default var/evals/<timestamp>)"))
        parser.add_argument("--scenarios", help=_("scenario directory (default evals/scenarios)"))
        parser.add_argument(
            "--live", action="store_true", help=_("no recordings: tools query the real back ends")
        )
        parser.add_argument(
            "--keep", action="store_true", help=_("keep each organization for the audit pages")
        )
        parser.add_argument("--list", action="store_true", help=_("list the selected scenarios and stop"))

    def handle(self, *args, **options):
        if options["repeat"] < 1 or options["parallel"] < 1:
            raise CommandError("--repeat and --parallel must be at least 1.")
        if options["compare"]:
            return self._compare(options["compare"], options["json"])
        baseline = self._baseline(options["baseline"])
        try:
            scenarios = load_suite(Path(options["scenarios"] or SCENARIOS_DIR), options["only"] or None)
        except ScenarioError as error:
            raise CommandError(str(error)) from None
        if not scenarios:
            raise CommandError("No scenario matches --only " + " ".join(options["only"]))
        if options["list"]:
            for scenario in scenarios:
                self.stdout.write(f"{scenario.name:<36} {scenario.category:<14} {scenario.difficulty}")
            return
        model = use_model(options["model"], options["base_url"])
        judge_model = options["judge_model"] or settings.CONFIG.eval_judge_model
        run_options = RunOptions(
            repeat=options["repeat"],
            parallel=options["parallel"],
            keep=options["keep"],
            live=options["live"],
            judge_provider=judge_provider(judge_model, options["judge_base_url"]) if judge_model else None,
        )
        started = datetime.now(UTC)
        mode = "live back ends" if options["live"] else "recordings"
        self.stderr.write(f"{len(scenarios)} scenario(s) × {options['repeat']} with model {model} ({mode})")
        self.stderr.write(self._estimate(scenarios, options["repeat"], model, baseline, options["baseline"]))
        results = asyncio.run(run_suite(scenarios, run_options, self._progress))
        self.stderr.write("")
        meta = {
            "model": model,
            "judge_model": judge_model or "",
            "started_at": started.isoformat(),
            "finished_at": datetime.now(UTC).isoformat(),
            "repeat": options["repeat"],
            "selection": options["only"],
            "live": options["live"],
        }
        document = reports.as_document(results, meta)
        if baseline is not None:
            document["comparison"] = reports.compare(document, baseline)
        stamp = started.strftime("%Y%m%dT%H%M%SZ")
        directory = Path(options["output"] or settings.CONFIG.data_dir / "evals" / stamp)
        directory.mkdir(parents=True, exist_ok=True)
        json_path = reports.write_json(document, directory, _path(options["json"]))
        junit_path = reports.write_junit(results, directory, path=_path(options["junit"]))
        if options["write_baseline"]:
            reports.write_json(
                {k: v for k, v in document.items() if k != "comparison"},
                directory,
                Path(options["write_baseline"]),
            )
        self.stdout.write(reports.table(results))
        self.stdout.write("")
        self.stdout.write(reports.rates_text(document["summary"]))
        if baseline is not None:
            self.stdout.write("")
            self.stdout.write(reports.comparison_text(document["comparison"]))
        if options["keep"]:
            kept = sorted({r.organization for r in results})
            self.stdout.write(f"\nkept organizations (audit pages, as platform staff): {', '.join(kept)}")
        self.stdout.write(f"\nresults: {json_path}\njunit:   {junit_path}")
        if not options["no_store"]:
            endpoint = (
                "" if model == "offline" else (options["base_url"] or settings.CONFIG.openai_base_url or "")
            )
            run = leaderboard.store_run(document, endpoint=endpoint, suite_version=suite_version(scenarios))
            self.stdout.write(f"stored:  run #{run.pk} (manage.py ongrid_eval --compare {run.pk} RUN)")
        if baseline is not None and document["comparison"]["regressions"]:
            names = ", ".join(r["scenario"] for r in document["comparison"]["regressions"])
            raise CommandError(f"Regression against the baseline {options['baseline']}: {names}")

    def _compare(self, ids: list[int], json_file: str | None) -> None:
        runs = {run.pk: run for run in EvalRun.objects.filter(pk__in=ids)}
        missing = [str(i) for i in ids if i not in runs]
        if missing:
            raise CommandError(f"No stored run {', '.join(missing)} (see the admin's Evaluations page).")
        table = leaderboard.comparison([runs[i] for i in ids])
        self.stdout.write(leaderboard.comparison_text(table))
        if json_file:
            Path(json_file).write_text(
                json.dumps(table, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )

    @staticmethod
    def _baseline(path: str | None) -> dict | None:
        if not path:
            return None
        try:
            return json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise CommandError(f"Cannot read the baseline {path}: {error}") from None

    @staticmethod
    def _estimate(scenarios, repeat: int, model: str, baseline: dict | None, path: str | None) -> str:
        if baseline is not None:
            return estimate(scenarios, repeat, model, baseline, Path(path)).text()
        try:
            reference = json.loads(OFFLINE_BASELINE.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return "Estimate: no reference run to estimate tokens from"
        return estimate(scenarios, repeat, model, reference, OFFLINE_BASELINE).text()

    def _progress(self, result: RunResult, done: int, total: int) -> None:
        filled = BAR_WIDTH * done // total
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        verdict = "pass" if result.passed else "FAIL"
        self.stderr.write(f"\r[{bar}] {done}/{total} {result.scenario[:40]:<40} {verdict}", ending="")
        self.stderr.flush()
