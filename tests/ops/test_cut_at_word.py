"""Errors longer than the limit are cut at a word with "… (N more characters)", never mid-word,
and the audit row keeps the whole error (issue 29, finding 8)."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.utils import timezone

from agents_app.llm.offline.summaries import describe
from audit_app.models import AuditLog
from audit_app.recorder import record_tool_call
from ops_app.core.text import cut_at_word
from tests.support.gate import make_chat

HINT = (
    "Error: SSH to web-01.prod.example.internal:22 failed: the device uses the strict host-key policy "
    "but has no known-hosts entry; add the output "
    "of `ssh-keyscan -p 22 web-01` to it, or choose trust on first use"
)


def test_a_short_text_is_untouched():
    assert cut_at_word("all good", 20) == "all good"


def test_a_long_text_is_cut_at_the_last_space_with_what_is_left_out():
    cut = cut_at_word(HINT, 160)
    shown, note = cut.split("… ")
    assert HINT.startswith(shown) and HINT[len(shown)] == " " and len(shown) <= 160
    assert note == f"({len(HINT) - len(shown)} more characters)"


def test_one_endless_word_is_cut_where_the_limit_falls():
    assert cut_at_word("x" * 50, 10) == "x" * 10 + "… (40 more characters)"


def test_the_worker_report_of_a_failed_tool_cuts_its_error_at_a_word():
    (bullet,) = describe(HINT)
    assert bullet.endswith("more characters)")
    shown = bullet.removeprefix("- ").split("… ")[0]
    assert HINT.startswith(shown) and HINT[len(shown)] == " "


@pytest.mark.django_db(transaction=True)
def test_the_audit_row_keeps_the_whole_error(member):
    chat = make_chat(member)
    long_error = HINT + " " + "then retry the restart " * 20
    row_id = asyncio.run(
        record_tool_call(
            organization_id=chat.organization_id,
            session_id=chat.pk,
            user_id=member.pk,
            persona="ops",
            tool_call_id="c-9",
            tool="host_restart_service",
            tool_class="write",
            arguments_raw=json.dumps({"host": "web-01"}),
            content=long_error,
            status="error",
            error=long_error,
            started_at=timezone.now(),
            duration_ms=5,
        )
    )
    assert AuditLog.objects.get(pk=row_id).error == long_error
