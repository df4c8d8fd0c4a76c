from __future__ import annotations

import dataclasses
import datetime as dt
import inspect

import pytest
from django.utils import timezone

from agents_app.toolsets.contract import ToolError
from agents_app.toolsets.registry import load_builtin_tools
from ops_app.estate.demo import load_demo_estate
from ops_app.models import AlertRule, Device, Incident
from tests.support.prometheus import LIVE_RULE, prometheus_server  # noqa: F401 - fixture
from tests.support.tools import run_tool

pytestmark = pytest.mark.django_db

INVENTORY_TOOLS = [
    "query_incidents",
    "get_incident_detail",
    "get_active_incidents",
    "query_alert_rules",
    "query_devices",
    "query_change_events",
    "find_topology_node",
    "expand_topology",
    "correlate_incident",
]


def configure(settings, **values):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, **values)


@pytest.fixture
def shop(org, settings):
    configure(settings, prometheus_url=None)
    load_demo_estate(org)
    now = timezone.now()
    Incident.objects.create(
        organization=org,
        title="Disk almost full on pg-01",
        severity="warning",
        status="resolved",
        started_at=now - dt.timedelta(days=2),
        resolved_at=now - dt.timedelta(days=2, hours=-1),
        affected_services=["postgres"],
        device=Device.objects.get(organization=org, name="pg-01"),
    )
    Incident.objects.create(
        organization=org,
        title="Redis evictions",
        severity="info",
        status="acknowledged",
        started_at=now - dt.timedelta(hours=3),
        affected_services=["redis"],
    )
    return org


def test_every_inventory_tool_is_read_only_with_a_schema_matching_its_handler():
    tools = load_builtin_tools()
    for name in INVENTORY_TOOLS:
        tool = tools[name]
        assert tool.tool_class == "read"
        accepted = set(inspect.signature(tool.handler).parameters) - {"ctx"}
        assert set(tool.parameters["properties"]) == accepted, name
        assert tool.parameters["additionalProperties"] is False
        assert set(tool.parameters.get("required", [])) <= accepted


def test_query_incidents_filters(shop):
    everything = run_tool("query_incidents", shop)
    assert everything["total"] == 3
    newest = everything["incidents"][0]
    assert newest["title"] == "Checkout returns 502 for 9% of requests"
    assert newest["alerts"] == 3 and newest["device"] == "checkout-01" and newest["started_at"].endswith("Z")
    titles = lambda **kw: [i["title"] for i in run_tool("query_incidents", shop, **kw)["incidents"]]  # noqa: E731
    assert titles(status="resolved") == ["Disk almost full on pg-01"]
    assert titles(severity="info") == ["Redis evictions"]
    assert titles(service="payments") == ["Checkout returns 502 for 9% of requests"]
    assert titles(service="pay") == []  # services match exactly
    assert titles(device="PG-01") == ["Disk almost full on pg-01"]
    assert titles(since="now-1d") == ["Checkout returns 502 for 9% of requests", "Redis evictions"]
    assert titles(until="now-1d") == ["Disk almost full on pg-01"]
    assert titles(text="disk full") == ["Disk almost full on pg-01"]
    assert titles(text="database connection") == ["Checkout returns 502 for 9% of requests"]  # the summary
    assert run_tool("query_incidents", shop, limit=1)["returned"] == 1


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"status": "on-fire"}, "status must be one of firing, acknowledged, resolved"),
        ({"since": "last tuesday"}, "since: 'last tuesday' is not a time"),
        ({"limit": 0}, "limit must be a positive integer"),
    ],
)
def test_query_incidents_explains_bad_arguments(shop, arguments, message):
    with pytest.raises(ToolError, match=message):
        run_tool("query_incidents", shop, **arguments)


def test_active_incidents_worst_first(shop):
    result = run_tool("get_active_incidents", shop)
    assert result["active"] == 2
    assert [i["severity"] for i in result["incidents"]] == ["critical", "info"]


def test_incident_detail_has_alerts_timeline_links_and_changes(shop):
    incident = Incident.objects.get(organization=shop, status="firing")
    detail = run_tool("get_incident_detail", shop, incident_id=incident.pk)
    assert [a["name"] for a in detail["alerts"]] == [
        "PaymentsDbPoolExhausted",
        "PaymentsLatencyHigh",
        "CheckoutHighErrorRate",
    ]
    assert detail["timeline"][0]["event"] in {"incident started", "alert PaymentsDbPoolExhausted firing"}
    assert [e["at"] for e in detail["timeline"]] == sorted(e["at"] for e in detail["timeline"])
    assert {"checkout-01", "payments-01"} <= set(detail["devices"])
    assert {n["name"] for n in detail["topology_nodes"]} == {"checkout", "payments"}
    assert detail["recent_changes"][0]["resource_name"] == "payments"
    with pytest.raises(ToolError, match="no incident 999999"):
        run_tool("get_incident_detail", shop, incident_id=999999)


def test_query_devices_filters_and_hides_secrets(shop):
    Device.objects.filter(organization=shop, name="web-01").update(ssh_password="hunter2-secret")
    everything = run_tool("query_devices", shop)
    assert everything["total"] == 9
    assert "hunter2-secret" not in str(everything) and "ssh_password" not in str(everything)
    names = lambda **kw: [d["name"] for d in run_tool("query_devices", shop, **kw)["devices"]]  # noqa: E731
    assert names(name="web") == ["web-01", "web-02"]
    assert names(name="192.0.2.41") == ["pg-01"]
    assert names(kind="database") == ["pg-01"]
    assert names(label="role=queue") == ["mq-01"]
    assert names(label="role=") == []
    assert len(names(label="env")) == 9
    assert names(online=True) == ["ongrid-manager"]
    manager = run_tool("query_devices", shop, name="ongrid-manager")["devices"][0]
    assert manager["transport"] == "local"


def test_query_alert_rules_without_prometheus_says_so(shop):
    result = run_tool("query_alert_rules", shop, severity="critical")
    assert [r["name"] for r in result["rules"]] == ["CheckoutHighErrorRate"]
    assert result["live"]["status"] == "not_configured"
    assert [
        r["name"] for r in run_tool("query_alert_rules", shop, name="payments", include_live=False)["rules"]
    ] == [
        "PaymentsDbPoolExhausted",
        "PaymentsLatencyHigh",
    ]


@pytest.mark.services
def test_query_alert_rules_reads_live_prometheus_rules(shop, settings, prometheus_server):  # noqa: F811
    configure(settings, prometheus_url=prometheus_server.url)
    result = run_tool("query_alert_rules", shop)
    assert len(result["rules"]) == 5
    live = result["live"]
    assert live["status"] == "ok"
    rule = next(r for r in live["rules"] if r["name"] == LIVE_RULE)
    assert rule["expression"] == 'up{job="node"} == 1' and rule["labels"] == {"severity": "info"}
    assert rule["group"] == "ongrid-test" and rule["health"] in {"ok", "unknown"}
    assert run_tool("query_alert_rules", shop, severity="critical")["live"]["rules"] == []


def test_every_inventory_tool_stays_in_its_tenant(shop, other_org):
    """Another organization sees none of the demo shop, whichever tool it calls."""
    incident = Incident.objects.get(organization=shop, status="firing")
    AlertRule.objects.create(organization=other_org, name="TheirRule", expression="up == 0")
    assert run_tool("query_incidents", other_org) == {"total": 0, "returned": 0, "incidents": []}
    assert run_tool("get_active_incidents", other_org) == {"active": 0, "incidents": []}
    for name in ("get_incident_detail", "correlate_incident"):
        with pytest.raises(ToolError, match="no incident"):
            run_tool(name, other_org, incident_id=incident.pk)
    assert [r["name"] for r in run_tool("query_alert_rules", other_org)["rules"]] == ["TheirRule"]
    assert run_tool("query_devices", other_org)["total"] == 0
    their_changes = run_tool("query_change_events", other_org, since="now-30d")["changes"]
    assert [c["resource_name"] for c in their_changes] == ["TheirRule"]
    assert run_tool("find_topology_node", other_org, query="checkout")["matches"] == []
    with pytest.raises(ToolError, match="no topology node"):
        run_tool("expand_topology", other_org, node="checkout")
    # and the shop does not see the other organization's rule
    assert "TheirRule" not in [r["name"] for r in run_tool("query_alert_rules", shop)["rules"]]


def test_list_tools_do_not_query_per_row(shop, django_assert_max_num_queries):
    with django_assert_max_num_queries(3):
        run_tool("query_incidents", shop)
    with django_assert_max_num_queries(2):
        run_tool("get_active_incidents", shop)
    with django_assert_max_num_queries(3):
        run_tool("query_devices", shop)
