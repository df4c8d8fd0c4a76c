"""Dispatch → worker links in the one session tree (web_app.tree.pair_dispatches): keyed by the
audit row, so a model that reuses one call id, and a refused dispatch, link right."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from chat_app.models import ChatSession
from tests.support import audit_rows
from web_app.tree import build_tree

pytestmark = pytest.mark.django_db

START = datetime(2026, 12, 1, 0, 26, tzinfo=UTC)


def dispatch(root, seconds: float, status: str = "ok", call_id: str = "offline_dispatch", duration: int = 3):
    return audit_rows.tool_call(
        root, "AgentTool", at=START + timedelta(seconds=seconds), tool_call_id=call_id, status=status,
        tool_class="control", duration_ms=duration,
    )  # fmt: skip


def worker(root, seconds: float, name: str, call_id: str = "offline_dispatch") -> ChatSession:
    row = audit_rows.session(
        root.organization, root.user, parent=root, description=name, spawned_by_call=call_id
    )
    ChatSession.objects.filter(pk=row.pk).update(created_at=START + timedelta(seconds=seconds))
    return row


def links(root) -> dict[int, int | None]:
    tree = build_tree(ChatSession.objects.get(pk=root.pk))
    return {e["id"]: e["worker"] for e in tree["timeline"] if e["type"] == "call"}


def test_one_reused_call_id_links_each_dispatch_to_its_own_worker(org, member):
    root = audit_rows.session(org, member)
    calls = [dispatch(root, s) for s in (0, 10, 20)]
    workers = [worker(root, s + 0.05, f"w{s}") for s in (0, 10, 20)]
    assert links(root) == {c.pk: w.pk for c, w in zip(calls, workers, strict=True)}


def test_a_refused_dispatch_between_two_takes_no_worker(org, member):
    root = audit_rows.session(org, member)
    first, refused, last = dispatch(root, 0), dispatch(root, 5, "deduped"), dispatch(root, 10)
    w1, w2 = worker(root, 0.04, "first"), worker(root, 10.04, "last")
    assert links(root) == {first.pk: w1.pk, refused.pk: None, last.pk: w2.pk}


def test_a_failed_dispatch_does_not_steal_a_later_worker(org, member):
    root = audit_rows.session(org, member)
    failed, ok = dispatch(root, 0, "error"), dispatch(root, 30, "ok", duration=1)
    late = worker(root, 33, "slow to start")  # outside the ok call's window: the fallback pairs it
    assert links(root) == {failed.pk: None, ok.pk: late.pk}


def test_workers_created_out_of_order_pair_by_time_not_by_row_order(org, member):
    root = audit_rows.session(org, member)
    a, b = dispatch(root, 0, call_id="c1", duration=100), dispatch(root, 0.05, call_id="c1", duration=100)
    second = worker(root, 0.06, "second", "c1")  # created (row) first, but for the second call
    first = worker(root, 0.01, "first", "c1")
    assert links(root) == {a.pk: first.pk, b.pk: second.pk}
