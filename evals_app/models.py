"""Stored evaluation runs: the leaderboard's rows (docs/evals.md, "Leaderboard").

`manage.py ongrid_eval` stores every run it grades, so models can be compared side by side over
time (`--compare RUN RUN`, the admin's Evaluations pages). A run is platform data, not an
organization's: its scenarios ran in throwaway organizations that are gone by the time it is
stored, so a result keeps the ids of its sessions (not foreign keys) and the pages link to the
ones still there (runs made with `--keep`).
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class EvalRun(models.Model):
    model = models.CharField(verbose_name=_("model"), max_length=200)
    endpoint = models.CharField(verbose_name=_("endpoint"), max_length=500, blank=True)
    judge_model = models.CharField(verbose_name=_("judge model"), max_length=200, blank=True)
    started_at = models.DateTimeField(verbose_name=_("started"))
    finished_at = models.DateTimeField(verbose_name=_("finished"))
    suite_version = models.CharField(
        verbose_name=_("suite version"),
        max_length=40,
        help_text=_("A digest of the scenario files run: two runs with the same one ran the same suite."),
    )
    selection = models.JSONField(verbose_name=_("selection"), default=list, blank=True)
    live = models.BooleanField(verbose_name=_("live back ends"), default=False)
    repeat = models.PositiveIntegerField(verbose_name=_("repeat"), default=1)
    runs = models.PositiveIntegerField(verbose_name=_("scenario runs"), default=0)
    passed = models.PositiveIntegerField(verbose_name=_("passed"), default=0)
    pass_rate = models.FloatField(verbose_name=_("pass rate"), default=0.0)
    macro_f1 = models.FloatField(verbose_name=_("macro-F1"), null=True, blank=True)
    tool_calls = models.PositiveIntegerField(verbose_name=_("tool calls"), default=0)
    tokens = models.PositiveBigIntegerField(verbose_name=_("tokens"), default=0)
    cost_usd = models.FloatField(verbose_name=_("cost (USD)"), null=True, blank=True)
    latency_s = models.FloatField(verbose_name=_("latency (s)"), default=0.0)

    class Meta:
        ordering = ("-started_at", "-pk")
        verbose_name = _("evaluation run")
        verbose_name_plural = _("evaluations")

    def __str__(self) -> str:
        return f"#{self.pk} {self.model} {self.started_at:%Y-%m-%d %H:%M}"


class EvalScenarioResult(models.Model):
    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results", verbose_name=_("run"))
    scenario = models.CharField(verbose_name=_("scenario"), max_length=200)
    category = models.CharField(verbose_name=_("category"), max_length=100)
    difficulty = models.CharField(verbose_name=_("difficulty"), max_length=20, blank=True)
    attempt = models.PositiveIntegerField(verbose_name=_("attempt"), default=1)
    passed = models.BooleanField(verbose_name=_("passed"), default=False)
    score = models.FloatField(verbose_name=_("score"), default=0.0)
    failed_checks = models.JSONField(verbose_name=_("failed checks"), default=list, blank=True)
    precision = models.FloatField(verbose_name=_("precision"), null=True, blank=True)
    recall = models.FloatField(verbose_name=_("recall"), null=True, blank=True)
    f1 = models.FloatField(verbose_name=_("F1"), null=True, blank=True)
    tool_calls = models.PositiveIntegerField(verbose_name=_("tool calls"), default=0)
    tokens = models.PositiveBigIntegerField(verbose_name=_("tokens"), default=0)
    cost_usd = models.FloatField(verbose_name=_("cost (USD)"), null=True, blank=True)
    latency_s = models.FloatField(verbose_name=_("latency (s)"), default=0.0)
    session_id = models.BigIntegerField(verbose_name=_("session"), null=True, blank=True)
    organization = models.CharField(verbose_name=_("organization"), max_length=100, blank=True)
    judge_verdict = models.CharField(verbose_name=_("judge verdict"), max_length=10, blank=True)

    class Meta:
        ordering = ("run", "scenario", "attempt")
        verbose_name = _("scenario result")
        verbose_name_plural = _("scenario results")
        constraints = [
            models.UniqueConstraint(fields=("run", "scenario", "attempt"), name="one_result_per_attempt")
        ]

    def __str__(self) -> str:
        return f"{self.scenario} #{self.attempt}"
