"""The R15 chain in `invoke_tool`: tenant binding, review gate, validation, timeout, audit, truncation."""

from __future__ import annotations

import dataclasses
import json

import pytest
from django.conf import settings

from agents_app.tools.invoke import GateDecision, invoke_tool, set_review_gate, truncate
from agents_app.toolsets.contract import ToolContext, ToolResult
from audit_app.models import AuditLog
from tests.support.agents import context, make_tool

pytestmark = pytest.mark.django_db(transaction=True)

RESTART_PARAMS = {
    "type": "object",
    "properties": {"device": {"type": "string"}, "service": {"type": "string"}},
    "required": ["device", "service"],
    "additionalProperties": False,
}


@pytest.fixture
def restarts():
    calls = []

    async def restart(ctx, device: str, service: str) -> str:
        calls.append((device, service))
        return f"restarted {service} on {device}"

    tool = make_tool("host_restart_service", restart, tool_class="write", params=RESTART_PARAMS)
    return tool, calls


@pytest.fixture
def gate():
    """Restore the module's default gate whatever a test installs."""
    previous = set_review_gate(None)
    yield
    set_review_gate(previous)


async def test_write_tools_are_refused_until_a_review_gate_is_installed(org, restarts, gate):
    tool, calls = restarts
    outcome = await invoke_tool(tool, context(org), '{"device": "web-01", "service": "nginx"}')
    assert outcome.status == "rejected" and "no review gate is installed" in outcome.content
    assert calls == []
    row = await AuditLog.objects.aget(pk=outcome.audit_id)
    assert (row.status, row.tool_class) == ("rejected", "write")


async def test_an_approving_gate_lets_the_call_through_and_sees_the_arguments(org, restarts, gate):
    tool, calls = restarts
    seen = []

    async def approve(tool, ctx, arguments):
        seen.append((tool.name, arguments))
        return GateDecision(True, "looks safe")

    set_review_gate(approve)
    outcome = await invoke_tool(tool, context(org), '{"device": "web-01", "service": "nginx"}')
    assert outcome.status == "ok" and outcome.content == "restarted nginx on web-01"
    assert calls == [("web-01", "nginx")]
    assert seen == [("host_restart_service", {"device": "web-01", "service": "nginx"})]


async def test_a_rejecting_or_broken_gate_refuses_with_its_reason(org, restarts, gate):
    tool, calls = restarts

    async def reject(tool, ctx, arguments):
        return GateDecision(False, "Decision: reject — blast radius too large")

    set_review_gate(reject)
    outcome = await invoke_tool(tool, context(org), '{"device": "web-01", "service": "nginx"}')
    assert outcome.status == "rejected" and "blast radius too large" in outcome.content

    async def broken(tool, ctx, arguments):
        raise RuntimeError("reviewer crashed")

    set_review_gate(broken)
    outcome = await invoke_tool(tool, context(org), '{"device": "web-01", "service": "nginx"}')
    assert outcome.status == "rejected" and "reviewer crashed" in outcome.content
    assert calls == []


async def test_read_tools_do_not_consult_the_gate(org, gate):
    async def refuse(tool, ctx, arguments):
        raise AssertionError("the gate must not see read tools")

    async def read(ctx):
        return "fine"

    set_review_gate(refuse)
    outcome = await invoke_tool(make_tool("query_devices", read), context(org), "")
    assert outcome.status == "ok" and outcome.content == "fine"


async def test_a_call_without_an_organization_is_refused_and_not_run(db):
    ran = []

    async def read(ctx):
        ran.append(1)

    outcome = await invoke_tool(make_tool("query_devices", read), ToolContext(organization_id=0), "{}")
    assert outcome.status == "rejected" and "organization" in outcome.content
    assert ran == [] and await AuditLog.objects.acount() == 0


async def test_arguments_are_validated_against_the_schema(org, restarts, gate):
    tool, calls = restarts
    outcome = await invoke_tool(tool, context(org), '{"device": "web-01"}')
    assert outcome.status == "error" and "'service' is a required property" in outcome.content
    outcome = await invoke_tool(tool, context(org), '["web-01"]')
    assert outcome.status == "error" and "must be a JSON object" in outcome.content
    assert calls == []


async def test_results_are_truncated_for_the_llm_with_the_original_size(org, monkeypatch):
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG, tool_result_limit=500))

    async def big(ctx):
        return "x" * 2000

    outcome = await invoke_tool(make_tool("host_bash", big), context(org), "{}")
    assert outcome.content.startswith("x" * 500)
    assert outcome.content.endswith("[truncated: showing 500 of 2000 characters]")
    assert outcome.result_size == 2000
    row = await AuditLog.objects.aget(pk=outcome.audit_id)
    assert row.result_size == 2000 and row.truncated and len(row.result) < 600


async def test_structured_results_are_json_for_the_llm(org):
    async def structured(ctx):
        return {"device": "web-01", "load": [0.5, 0.7], "note": "ünïcode"}

    outcome = await invoke_tool(make_tool("get_host_load", structured), context(org), "{}")
    assert json.loads(outcome.content) == {"device": "web-01", "load": [0.5, 0.7], "note": "ünïcode"}


async def test_tool_result_rejects_unknown_statuses():
    with pytest.raises(ValueError, match="unknown tool status"):
        ToolResult("x", status="maybe")


def test_truncate_leaves_short_text_alone():
    assert truncate("short", 10) == "short"
    assert truncate("a" * 11, 10) == "a" * 10 + "\n…[truncated: showing 10 of 11 characters]"


async def test_a_call_cancelled_while_running_is_audited_as_killed(org):
    import asyncio

    entered = asyncio.Event()

    async def slow(ctx, cmd: str):
        entered.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(invoke_tool(make_tool("host_bash", slow), context(org), '{"cmd": "sleep"}'))
    await asyncio.wait_for(entered.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    row = await AuditLog.objects.aget(tool="host_bash")
    assert row.status == "killed" and row.arguments == '{"cmd": "sleep"}'


async def test_the_gate_hears_how_an_approved_write_ended(org, gate):
    """Succeeded, failed with the tool's error, or stopped mid-run: never a bare "it ran"."""
    import asyncio

    from agents_app.toolsets.contract import ToolError

    heard: list[tuple[str, str]] = []
    entered = asyncio.Event()

    async def approve(tool, ctx, arguments):
        async def on_executed(status: str, error: str) -> None:
            heard.append((status, error))

        return GateDecision(True, "looks safe", on_executed=on_executed)

    async def restart(ctx, device: str, service: str) -> str:
        if device == "strict-01":
            raise ToolError("Host key verification failed.")
        if device == "slow-01":
            entered.set()
            await asyncio.Event().wait()
        return f"restarted {service} on {device}"

    set_review_gate(approve)
    tool = make_tool("host_restart_service", restart, tool_class="write", params=RESTART_PARAMS)
    for device in ("web-01", "strict-01"):
        await invoke_tool(tool, context(org), json.dumps({"device": device, "service": "nginx"}))
    task = asyncio.create_task(invoke_tool(tool, context(org), '{"device": "slow-01", "service": "nginx"}'))
    await asyncio.wait_for(entered.wait(), timeout=5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    assert heard == [
        ("ok", ""),
        ("error", "Host key verification failed."),
        ("killed", "stopped while running; the change may have been partly made"),
    ]
