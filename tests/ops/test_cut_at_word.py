"""Errors longer than the limit are cut at a word with "… (N more characters)", never mid-word,
and the audit row keeps the whole error (issue 29, finding 8)."""

from __future__ import annotations

import pytest

from agents_app.llm.offline.summaries import describe
from agents_app.tools.invoke import invoke_tool
from agents_app.toolsets.contract import ToolError
from audit_app.models import AuditLog
from ops_app.core.text import cut_at_word
from tests.support.agents import context, make_tool

HINT = (
    "SSH to web-01.prod.example.internal:22 failed: the device uses the strict host-key policy "
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
async def test_the_report_of_a_failed_call_is_cut_and_its_audit_row_keeps_it_whole(org):
    long_error = HINT + " then retry the restart" * 20

    async def connect(ctx) -> str:
        raise ToolError(long_error)

    outcome = await invoke_tool(make_tool("host_uptime", connect), context(org), "{}")
    assert outcome.status == "error"
    (bullet,) = describe(outcome.content)  # what the worker's tile and the audit tree show
    shown = bullet.removeprefix("- ").split("… ")[0]
    assert outcome.content.startswith(shown) and outcome.content[len(shown)] == " "
    assert bullet.endswith(f"({len(outcome.content) - len(shown)} more characters)")
    row = await AuditLog.objects.aget(pk=outcome.audit_id)
    assert row.error == long_error  # the audit record has every character
