"""The first write tools, each against the real thing: systemctl through the local and SSH
transports, incidents through ops_app service functions, silences in a real Alertmanager."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess

import httpx
import pytest
from asgiref.sync import sync_to_async

from agents_app.gate.review_gate import describe_change
from agents_app.models import MutatingProposal
from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.hosts import ssh as ssh_transport
from agents_app.toolsets.registry import load_builtin_tools
from fakes.openai_server import text
from ops_app.models import ChangeEvent, Device, Incident
from tests.support.alertmanager import running_alertmanager
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.gate import gated_call, make_chat, make_incident, make_user_agent, make_worker
from tests.support.required import require
from tests.support.sshd import SSHServer, sshd  # noqa: F401 - the fixture

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections", "fresh_registry"),
]

UNIT = "ongrid-test-unit"  # allowlisted in these tests; no machine has it, so systemctl always complains
REASON = "Workers are stuck; runbook RB-7 says restart the service."


@pytest.fixture
def tools():
    return load_builtin_tools()


def configure(settings, **values) -> None:
    settings.CONFIG = dataclasses.replace(settings.CONFIG, **values)


def host_says(*argv: str) -> str:
    """What this machine's own systemctl answers, to compare with what the tool reports."""
    require(shutil.which(argv[0]) is not None, f"{argv[0]} on this machine")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert done.returncode != 0, "the test unit must not exist on this machine"
    return (done.stderr.strip() or done.stdout.strip()).splitlines()[0]


# ---- host_restart_service ------------------------------------------------------------------------


async def test_restart_outside_the_allowlist_is_refused_before_any_review(org, member, agents_llm, settings):
    configure(settings, restartable_services=("nginx",))
    chat = await sync_to_async(make_chat)(member)
    worker = await sync_to_async(make_worker)(chat)
    arguments = {"device": "web-01", "service": "postgresql", "reason": REASON}

    outcome = await gated_call(worker, "specialist-ops", "host_restart_service", arguments, "r-1")

    assert outcome.status == "rejected" and "not in the restartable services allowlist" in outcome.content
    assert "ONGRID_RESTARTABLE_SERVICES: nginx" in outcome.content
    assert not await MutatingProposal.objects.filter(tool_call_id="r-1").aexists()
    assert "reviewer" not in agents_llm.seen


async def test_restart_handler_checks_the_allowlist_itself(org, tools, settings):
    configure(settings, restartable_services=("nginx",))
    with pytest.raises(ToolError, match="allowlist"):
        await tools["host_restart_service"].handler(
            ToolContext(organization_id=org.pk), device="web-01", service="sshd", reason=REASON
        )


async def test_approved_restart_on_a_local_device_reports_the_hosts_own_error(
    org, member, agents_llm, settings
):
    expected = host_says("systemctl", "restart", UNIT)
    configure(settings, restartable_services=(UNIT,))
    await Device.objects.acreate(organization=org, name="web-01", transport=Device.Transport.LOCAL)
    chat = await sync_to_async(make_chat)(member)
    worker = await sync_to_async(make_worker)(chat)
    agents_llm.add("reviewer", text("Decision: approve\nSOP: pass — RB-7"))

    outcome = await gated_call(
        worker,
        "specialist-ops",
        "host_restart_service",
        {"device": "web-01", "service": UNIT, "reason": REASON},
    )

    assert outcome.status == "error"
    assert f"`systemctl restart {UNIT}` exited with status" in outcome.content and expected in outcome.content
    proposal = await MutatingProposal.objects.aget(tool_call_id="call-1")
    assert (
        proposal.payload["action"] == f"systemctl restart {UNIT}" and proposal.payload["target"] == "web-01"
    )
    # It ran and failed: the proposal says so, with the host's words, and never "executed".
    assert proposal.executed_at is None and proposal.failed_at is not None
    assert proposal.execution_status == "error" and expected in proposal.execution_error
    assert proposal.outcome == "failed"


async def test_restart_over_ssh_reports_the_remote_hosts_error(org, tools, settings, sshd):  # noqa: F811
    expected = host_says("systemctl", "restart", UNIT)  # the SSH server runs on this same machine
    configure(settings, restartable_services=(UNIT,))
    server: SSHServer = sshd
    await Device.objects.acreate(
        organization=org,
        name="db-01",
        address=server.host,
        transport=Device.Transport.SSH,
        ssh_port=server.port,
        ssh_username=server.username,
        ssh_private_key=server.private_key,
        ssh_known_hosts=server.known_hosts,
        ssh_host_key_policy=Device.KnownHosts.STRICT,
    )
    try:
        with pytest.raises(ToolError) as raised:
            await tools["host_restart_service"].handler(
                ToolContext(organization_id=org.pk), device="db-01", service=UNIT, reason=REASON
            )
    finally:
        await ssh_transport.close_all()
    assert expected in str(raised.value)


async def test_restart_never_reaches_another_tenants_device(org, other_org, tools, settings):
    configure(settings, restartable_services=(UNIT,))
    await Device.objects.acreate(organization=other_org, name="theirs", transport=Device.Transport.LOCAL)
    with pytest.raises(ToolError, match="not found in this organization"):
        await tools["host_restart_service"].handler(
            ToolContext(organization_id=org.pk), device="theirs", service=UNIT, reason=REASON
        )


# ---- incidents -----------------------------------------------------------------------------------


async def test_acknowledge_then_resolve_records_change_events_with_the_actor(org, member, tools):
    incident = await sync_to_async(make_incident)(org)
    ctx = ToolContext(organization_id=org.pk, user_id=member.pk, persona_name="specialist-ops")

    acked = await tools["acknowledge_incident"].handler(ctx, incident_id=incident.pk, reason=REASON)
    resolved = await tools["resolve_incident"].handler(ctx, incident_id=incident.pk, reason=REASON)

    assert acked["status"] == "acknowledged" and resolved["status"] == "resolved"
    row = await Incident.objects.aget(pk=incident.pk)
    assert row.acknowledged_at is not None and row.resolved_at is not None
    events = [
        e
        async for e in ChangeEvent.objects.filter(
            resource_type="incident", resource_id=str(incident.pk)
        ).order_by("occurred_at")
    ]
    assert [e.after["status"] for e in events] == ["acknowledged", "resolved"]
    assert all(e.actor_id == member.pk and e.actor_name == "agent specialist-ops" for e in events)
    assert events[0].before == {"status": "firing"} and REASON in events[0].summary


@pytest.mark.parametrize(
    "first, second, message",
    [
        ("acknowledge_incident", "acknowledge_incident", "already acknowledged"),
        ("resolve_incident", "acknowledge_incident", "is resolved"),
        ("resolve_incident", "resolve_incident", "already resolved"),
    ],
)
async def test_incident_transitions_that_do_not_apply_are_explained(org, tools, first, second, message):
    incident = await sync_to_async(make_incident)(org)
    ctx = ToolContext(organization_id=org.pk)
    await tools[first].handler(ctx, incident_id=incident.pk, reason=REASON)
    with pytest.raises(ToolError, match=message):
        await tools[second].handler(ctx, incident_id=incident.pk, reason=REASON)


async def test_incident_tools_stay_in_their_tenant(org, other_org, tools):
    theirs = await sync_to_async(make_incident)(other_org)
    with pytest.raises(ToolError, match="not found in this organization"):
        await tools["acknowledge_incident"].handler(
            ToolContext(organization_id=org.pk), incident_id=theirs.pk, reason=REASON
        )
    assert (await Incident.objects.aget(pk=theirs.pk)).status == "firing"


# ---- create_silence ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def alertmanager(tmp_path_factory):
    # No alert is ever sent in these tests, so the webhook is never called.
    with running_alertmanager("http://127.0.0.1:9/unused", tmp_path_factory.mktemp("am")) as server:
        yield server


async def test_approved_silence_shows_up_in_a_real_alertmanager(
    org, member, agents_llm, settings, alertmanager
):
    configure(settings, alertmanager_url=alertmanager.url)
    await sync_to_async(make_user_agent)(org, "silencer", "mutating-with-confirm", ["create_silence"])
    chat = await sync_to_async(make_chat)(member)
    worker = await sync_to_async(make_worker)(chat, "silencer")
    agents_llm.add("reviewer", text("Decision: approve\nSOP: pass — maintenance window MW-3"))
    arguments = {
        "matchers": [
            {"name": "instance", "value": "web-01:9100"},
            {"name": "alertname", "value": "HostDown"},
        ],
        "duration_minutes": 30,
        "reason": "web-01 is being re-imaged in maintenance window MW-3.",
    }

    outcome = await gated_call(worker, "silencer", "create_silence", arguments, "s-1")

    assert outcome.status == "ok"
    silence_id = json.loads(outcome.content)["silence_id"]
    async with httpx.AsyncClient() as client:
        silence = (await client.get(f"{alertmanager.url}/api/v2/silence/{silence_id}")).json()
    assert silence["status"]["state"] == "active"
    assert {(m["name"], m["value"]) for m in silence["matchers"]} == {
        ("instance", "web-01:9100"),
        ("alertname", "HostDown"),
    }
    assert silence["comment"] == arguments["reason"] and silence["createdBy"] == "ongrid/silencer"
    proposal = await MutatingProposal.objects.aget(tool_call_id="s-1")
    assert proposal.payload["blast_radius"] == "single_device" and proposal.executed_at is not None


async def test_rejected_silence_never_reaches_alertmanager(org, member, agents_llm, settings, alertmanager):
    configure(settings, alertmanager_url=alertmanager.url)
    await sync_to_async(make_user_agent)(org, "silencer", "mutating-with-confirm", ["create_silence"])
    chat = await sync_to_async(make_chat)(member)
    worker = await sync_to_async(make_worker)(chat, "silencer")
    agents_llm.add("reviewer", text("Decision: reject\nBlast radius: silences every alert"))
    comment = "Silence everything, it is noisy today (rejected-silence-test)."
    arguments = {"matchers": [{"name": "alertname", "value": ".+", "isRegex": True}], "duration_minutes": 60}

    outcome = await gated_call(worker, "silencer", "create_silence", {**arguments, "reason": comment}, "s-2")

    assert outcome.status == "rejected"
    async with httpx.AsyncClient() as client:
        silences = (await client.get(f"{alertmanager.url}/api/v2/silences")).json()
    assert all(s["comment"] != comment for s in silences)
    proposal = await MutatingProposal.objects.aget(tool_call_id="s-2")
    assert proposal.payload["blast_radius"] == "tenant_wide"


async def test_alertmanagers_own_refusal_comes_back(org, tools, settings, alertmanager):
    configure(settings, alertmanager_url=alertmanager.url)
    broken = [{"name": "alertname", "value": "(", "isRegex": True}]
    with pytest.raises(ToolError, match=r"Alertmanager refused the silence \(400\)"):
        await tools["create_silence"].handler(
            ToolContext(organization_id=org.pk), matchers=broken, duration_minutes=5, reason=REASON
        )


async def test_silence_without_alertmanager_says_so(org, tools, settings):
    configure(settings, alertmanager_url=None)
    with pytest.raises(ToolError, match="ALERTMANAGER_URL is unset"):
        await tools["create_silence"].handler(
            ToolContext(organization_id=org.pk),
            matchers=[{"name": "alertname", "value": "X"}],
            duration_minutes=5,
            reason=REASON,
        )


@pytest.mark.parametrize(
    "matchers, radius",
    [
        ([{"name": "instance", "value": "web-01"}], "single_device"),
        ([{"name": "job", "value": "node"}, {"name": "alertname", "value": "X"}], "cluster"),
        ([{"name": "alertname", "value": "X"}], "tenant_wide"),
        ([{"name": "instance", "value": "web-.*", "isRegex": True}], "tenant_wide"),
    ],
)
def test_silence_blast_radius(tools, matchers, radius):
    change = describe_change(tools["create_silence"], {"matchers": matchers, "duration_minutes": 5})
    assert change["blast_radius"] == radius


def test_every_write_tool_is_gated_and_asks_for_a_reason(tools):
    writes = {name: tool for name, tool in tools.items() if tool.mutates}
    assert set(writes) == {
        "host_restart_service",
        "acknowledge_incident",
        "resolve_incident",
        "silence_incident",
        "create_silence",
        "k8s_rollout_restart",
        "k8s_rollout_undo",
        "k8s_scale",
    }
    assert all("reason" in tool.parameters["required"] for tool in writes.values())


def test_gate_settings_are_read_from_the_environment():
    from ongrid_site.config import ConfigError, load

    config = load(
        {
            "SECRET_KEY": "x",
            "ONGRID_RESTARTABLE_SERVICES": "nginx, redis-server ,",
            "ONGRID_REVIEW_TIMEOUT": "30",
            "ONGRID_APPROVAL_TIMEOUT": "600",
        }
    )
    assert config.restartable_services == ("nginx", "redis-server")
    assert (config.review_timeout, config.approval_timeout) == (30.0, 600.0)
    defaults = load({"SECRET_KEY": "x"})
    assert (defaults.review_timeout, defaults.approval_timeout) == (60.0, 300.0)
    with pytest.raises(ConfigError, match="ONGRID_REVIEW_TIMEOUT must be a number"):
        load({"SECRET_KEY": "x", "ONGRID_REVIEW_TIMEOUT": "soon"})
