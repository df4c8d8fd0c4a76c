"""The shared rules of rows delivered later (ops_app/core/retry_rows.py): a due row is claimed by
one drainer only, an abandoned claim is taken over after its lease, and pauses double to a cap."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from im_app.models import IMApp, LateDelivery, OutboxMessage
from ops_app.core import retry_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def row(org) -> OutboxMessage:
    app = IMApp.objects.create(organization=org, platform="telegram", name="bot", bot_token="123:abc")
    return OutboxMessage.objects.create(
        organization=org, app=app, address={"chat_id": "1"}, next_attempt_at=timezone.now()
    )


def pending():
    return OutboxMessage.objects.filter(status=LateDelivery.PENDING)


def test_a_due_row_is_won_by_one_drainer_only_until_its_lease_runs_out(row):
    now = timezone.now()
    assert retry_rows.due(pending(), now) == [row.pk]
    assert retry_rows.claim(pending(), row.pk, now, timedelta(minutes=2)) is True
    assert retry_rows.claim(pending(), row.pk, now, timedelta(minutes=2)) is False
    assert retry_rows.due(pending(), now) == []  # held
    later = now + timedelta(minutes=3)  # the first drainer died mid-delivery
    assert retry_rows.due(pending(), later) == [row.pk]
    assert retry_rows.claim(pending(), row.pk, later, timedelta(minutes=2)) is True


def test_a_row_not_yet_due_is_neither_listed_nor_claimed(row):
    now = timezone.now()
    OutboxMessage.objects.filter(pk=row.pk).update(next_attempt_at=now + timedelta(seconds=30))
    assert retry_rows.due(pending(), now) == []
    assert retry_rows.claim(pending(), row.pk, now) is False


def test_pauses_double_from_the_first_up_to_the_cap():
    pauses = [retry_rows.backoff(n).total_seconds() for n in range(1, 8)]
    assert pauses == [30, 60, 120, 240, 480, 900, 900]
