"""A short soak of the scale-out shape (bench/soak.py): daphne + 2 Celery workers + Redis +
PostgreSQL and the benchmark's fake model, 60 turns from 10 concurrent `?wait=1` clients.

Memory after warm-up must stay flat, connections within the pools, and nothing may be left
running: no session row, no turn and no task on the workers' host loops.
"""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection

from bench.soak import WEB, WORKER, soak, start_stack, summary
from ops_app.models import ApiToken
from tests.support import django_subprocess
from tests.support.required import require

pytestmark = pytest.mark.django_db(transaction=True)

GROWTH_LIMIT_KIB = 24 * 1024  # per process, after warm-up: a leak of a turn's worth each would show


def test_soak_stays_flat_and_bounded(member, tmp_path):
    require(connection.vendor == "postgresql", "PostgreSQL (DATABASE_URL)")
    require(bool(settings.CONFIG.redis_url), "Redis (REDIS_URL)")
    _, token = ApiToken.issue(member)
    (tmp_path / "data").mkdir()
    with start_stack(
        django_subprocess.test_database_url(), settings.CONFIG.redis_url, tmp_path, ONGRID_DB_POOL_SIZE="6"
    ) as stack:
        report = soak(stack, token, turns=60, clients=10, every=0.5, warmup=0.3)
    print(summary(report))
    assert report.answered == 60 and not report.wrong, report.wrong[:3]
    assert report.left_running == 0
    assert (report.host_running_end, report.host_tasks_end) == (0, 0), report.host_tasks_left
    assert 0 < report.peak_connections[WEB] <= 6
    assert 0 < report.peak_connections[WORKER] <= 12
    assert max(s.host_running for s in report.samples) > 0  # the sampler did see turns in flight
    for name, growth in report.growth_kib().items():
        assert growth < GROWTH_LIMIT_KIB, f"{name} grew {growth} KiB after warm-up:\n{summary(report)}"
    assert report.problems(GROWTH_LIMIT_KIB) == []
