"""One audit row per tool call (R19): the LLM's arguments verbatim, secrets redacted, tenants apart."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import pytest
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from agents_app.kernel.events import ListSink, ToolStart
from agents_app.kernel.loop import run_agent
from agents_app.tools.cancel import CancelToken
from audit_app.models import AuditLog
from audit_app.redaction import MASK, redact_arguments, redact_text
from chat_app.models import ChatSession
from fakes.openai_server import call, text, tool_calls
from tests.support.agents import context, make_tool, persona, provider_for

SECRET_ARGS = (
    '{"device": "db-01",  "password": "hunter2-xyz", '
    '"header": "Authorization: Bearer abcdefghijklmnop123", "note": "keep me"}'
)


@pytest.mark.django_db(transaction=True)
async def test_one_row_per_call_with_the_llms_arguments_and_secrets_redacted(fake_llm, org, member, caplog):
    session = await ChatSession.objects.acreate(organization=org, user=member, agent_id="specialist-db")

    async def connect(ctx, **arguments):
        return "connected; server said: token=SERVERSIDE-SECRET-42"

    fake_llm.script(
        tool_calls(
            call("db_connect", SECRET_ARGS, id="a1"), call("db_connect", '{"password": "p@ss', id="a2")
        ),
        text("Connected."),
    )
    sink = ListSink()
    caplog.set_level(logging.DEBUG)
    result = await run_agent(
        persona=persona("specialist-db"),
        messages=[{"role": "user", "content": "connect to db-01"}],
        tools=[make_tool("db_connect", connect)],
        ctx=context(org, session, member),
        provider=provider_for(fake_llm),
        sink=sink,
        cancel=CancelToken(),
    )
    assert result.status == "completed"
    rows = [row async for row in AuditLog.objects.filter(session=session).order_by("tool_call_id")]
    assert [r.tool_call_id for r in rows] == ["a1", "a2"]
    first, second = rows
    assert first.arguments == (
        '{"device": "db-01",  "password": "[REDACTED]", '
        '"header": "Authorization: Bearer [REDACTED]", "note": "keep me"}'
    )
    assert (first.status, first.tool, first.tool_class, first.persona) == (
        "ok",
        "db_connect",
        "read",
        "specialist-db",
    )
    assert first.user_id == member.pk and first.organization_id == org.pk
    assert "SERVERSIDE-SECRET-42" not in first.result and "connected" in first.result
    assert second.status == "error" and second.arguments.startswith('{"password": ')
    assert "p@ss" not in second.arguments
    everything = " ".join(f"{r.arguments} {r.result} {r.error}" for r in rows)
    everything += " ".join(e.arguments_raw for e in sink.of(ToolStart))
    for secret in ("hunter2-xyz", "abcdefghijklmnop123", "SERVERSIDE-SECRET-42"):
        assert secret not in everything
        assert secret not in caplog.text


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"api_key": 123, "n": 1}', '{"api_key": "[REDACTED]", "n": 1}'),
        ('{"max_tokens": 5, "token_count": 2}', '{"max_tokens": 5, "token_count": 2}'),
        ('{"cmd": "PGPASSWORD=s3cr3t psql -h db"}', '{"cmd": "PGPASSWORD=[REDACTED] psql -h db"}'),
        ('{"url": "https://ops:pw123@example.com/x"}', '{"url": "https://[REDACTED]@example.com/x"}'),
        ('{"creds": {"secret": {"a": 1}}}', '{"creds": "[REDACTED]"}'),
        ('{"conn": {"secret": {"a": 1}}}', '{"conn": {"secret": "[REDACTED]"}}'),
        ('{"client_secret": {"nested": true}}', '{"client_secret": "[REDACTED]"}'),
        ("not json at all, key sk-ABCDEFGHIJKLMNOPQRSTU", "not json at all, key [REDACTED]"),
    ],
)
def test_redaction_cases(raw, expected):
    assert redact_arguments(raw) == expected


SAFE_KEYS = st.sampled_from(["device", "path", "query", "limit", "service", "step", "max_tokens"])
SAFE_VALUES = st.one_of(
    st.integers(), st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789 ._/-", max_size=20), st.booleans()
)


@given(st.dictionaries(SAFE_KEYS, SAFE_VALUES))
def test_arguments_without_secrets_are_kept_byte_for_byte(arguments):
    raw = json.dumps(arguments)
    assert redact_arguments(raw) == raw


@given(
    st.sampled_from(["password", "db_password", "apiToken", "X-Secret", "authorization"]),
    st.text(max_size=40),
)
def test_any_value_under_a_secret_key_is_masked(key, value):
    redacted = json.loads(redact_arguments(json.dumps({key: value, "device": "web-01"})))
    assert redacted == {key: MASK, "device": "web-01"}


def test_free_text_credentials_are_masked():
    assert redact_text("curl -H 'Authorization: Bearer eyJabc.def123456789'") == (
        "curl -H 'Authorization: Bearer [REDACTED]'"
    )
    assert redact_text("ghp_" + "a" * 30 + " and AKIA" + "B" * 16) == "[REDACTED] and [REDACTED]"


def _row(org, tool):
    return AuditLog.objects.create(
        organization=org, tool=tool, tool_class="read", status="ok", started_at=datetime.now(UTC)
    )


@pytest.mark.django_db
def test_tenants_never_see_each_others_audit_rows(org, other_org, member, outsider):
    _row(org, "query_devices")
    _row(other_org, "query_incidents")
    assert [r.tool for r in AuditLog.objects.for_user(member)] == ["query_devices"]
    assert [r.tool for r in AuditLog.objects.for_user(outsider)] == ["query_incidents"]


@pytest.mark.django_db
def test_admin_lists_own_tenant_rows_read_only(client, org, other_org, org_admin):
    _row(org, "query_devices")
    _row(other_org, "query_incidents")
    client.force_login(org_admin)
    page = client.get(reverse("admin:audit_app_auditlog_changelist"))
    assert page.status_code == 200
    assert b"query_devices" in page.content and b"query_incidents" not in page.content
    assert client.get(reverse("admin:audit_app_auditlog_add")).status_code == 403
