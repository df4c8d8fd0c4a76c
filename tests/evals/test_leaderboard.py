"""The leaderboard: runs stored from their results documents, compared side by side per category
in the terminal (`--compare`) and on the admin's comparison page, which shows both runs, their
differences and a link to each kept session; only platform staff see it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from chat_app.models import ChatSession
from evals_app import leaderboard, reports
from evals_app.grading import Check
from evals_app.models import EvalRun
from evals_app.runner import RunResult
from ops_app.tenancy.accounts import create_organization

pytestmark = pytest.mark.django_db


def _result(scenario: str, category: str, passed: bool, f1: float | None, **extra) -> RunResult:
    result = RunResult(
        scenario, category, "hard", [], 1, passed, 1.0 if passed else 0.5, [Check("answered", True)]
    )
    result.entities = (
        None if f1 is None else {"expected": [], "claimed": [], "precision": f1, "recall": f1, "f1": f1}
    )
    for key, value in extra.items():
        setattr(result, key, value)
    return result


def _store(model: str, results: list[RunResult], endpoint: str = "") -> EvalRun:
    now = datetime(2026, 12, 1, 9, 0, tzinfo=UTC).isoformat()
    document = reports.as_document(
        results, {"model": model, "started_at": now, "finished_at": now, "repeat": 1}
    )
    return leaderboard.store_run(document, endpoint=endpoint, suite_version="abc123def456")


@pytest.fixture
def two_runs():
    weaker = _store(
        "small-model",
        [
            _result("cascade-a", "cascade", False, 0.4, tool_calls=6, cost_usd=0.002),
            _result("disk-a", "disk", True, 1.0, tool_calls=3, cost_usd=0.001),
        ],
        endpoint="https://user:s3cret@llm.example:8443/v1?key=abc",
    )
    stronger = _store(
        "big-model",
        [
            _result("cascade-a", "cascade", True, 0.8, tool_calls=4, cost_usd=0.01),
            _result("disk-a", "disk", True, 1.0, tool_calls=2, cost_usd=0.004),
        ],
    )
    return weaker, stronger


def test_a_stored_run_keeps_its_totals_and_no_credentials(two_runs):
    weaker, _ = two_runs
    assert (weaker.runs, weaker.passed, weaker.pass_rate, weaker.macro_f1) == (2, 1, 0.5, 0.7)
    assert (weaker.tool_calls, weaker.cost_usd) == (9, 0.003)
    assert weaker.endpoint == "https://llm.example:8443/v1"
    assert [r.f1 for r in weaker.results.order_by("scenario")] == [0.4, 1.0]


def test_compare_prints_the_runs_side_by_side_per_category(two_runs, tmp_path):
    weaker, stronger = two_runs
    out = StringIO()
    target = tmp_path / "compare.json"
    call_command(
        "ongrid_eval", "--compare", str(weaker.pk), str(stronger.pk), "--json", str(target), stdout=out
    )
    lines = out.getvalue().splitlines()
    assert lines[0].split()[:5] == [
        "category",
        f"#{weaker.pk}",
        "small-model",
        f"#{stronger.pk}",
        "big-model",
    ]
    cascade = next(line for line in lines if line.startswith("cascade"))
    assert "0/1 0% F1 0.40 $0.0020 6 calls" in cascade and "1/1 100% F1 0.80 $0.0100 4 calls" in cascade
    overall = next(line for line in lines if line.startswith("overall"))
    assert "1/2 50% F1 0.70" in overall and "2/2 100% F1 0.90" in overall
    table = json.loads(target.read_text())
    assert [r["model"] for r in table["runs"]] == ["small-model", "big-model"]
    assert [f["tool_calls_per_scenario"] for f in table["categories"]["overall"]] == [4.5, 3.0]
    with pytest.raises(CommandError, match="No stored run 999999"):
        call_command("ongrid_eval", "--compare", str(weaker.pk), "999999", stdout=StringIO())


def test_the_comparison_page_shows_both_runs_and_their_differences(two_runs, admin_client, admin_user):
    weaker, stronger = two_runs
    organization = create_organization("Evaluation cascade-a", "eval-kept")
    kept = ChatSession.objects.create(organization=organization, user=admin_user, title="eval: cascade-a")
    stronger.results.filter(scenario="cascade-a").update(session_id=kept.pk)
    weaker.results.filter(scenario="cascade-a").update(session_id=kept.pk + 1000)  # removed since

    url = f"{reverse('admin:evals_app_evalrun_compare')}?run={weaker.pk}&run={stronger.pk}"
    html = admin_client.get(url).content.decode()
    assert html.count('class="compared-run"') == 2
    assert "small-model" in html and "big-model" in html
    # The cascade category went from 0/1 to 1/1: +100 points for the second run.
    assert '<span class="delta up">+100 pt</span>' in html
    assert 'data-scenario="cascade-a"' in html and 'class="scenario changed"' in html
    assert 'class="scenario"' in html  # disk-a passed in both: not marked changed
    assert html.count('class="session-link"') == 1
    assert f'href="{reverse("audit-session", args=[kept.pk])}"' in html
    assert "<svg" in html  # the trend of pass rate and F1 over the two runs
    assert "style=" not in html.split("<body", 1)[1].split('id="content-main"', 1)[1]

    changelist = admin_client.post(
        reverse("admin:evals_app_evalrun_changelist"),
        {"action": "compare_runs", "_selected_action": [weaker.pk, stronger.pk]},
    )
    assert changelist.status_code == 302 and changelist["Location"] == url


def test_only_platform_staff_see_the_evaluations(two_runs, client):
    staff = get_user_model().objects.create_user("orgadmin", password="pw-12345678", is_staff=True)
    client.force_login(staff)
    assert client.get(reverse("admin:evals_app_evalrun_compare")).status_code == 403
    assert client.get(reverse("admin:evals_app_evalrun_changelist")).status_code == 403
