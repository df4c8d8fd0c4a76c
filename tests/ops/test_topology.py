from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from agents_app.toolsets.contract import ToolError
from ops_app.estate.demo import load_demo_estate
from ops_app.models import Alert, ChangeEvent, Incident, TopologyEdge, TopologyNode
from tests.support.tools import run_tool

pytestmark = pytest.mark.django_db


@pytest.fixture
def shop(org):
    load_demo_estate(org)
    return org


def _names(result: dict, **where) -> set[str]:
    return {n["name"] for n in result["nodes"] if all(n[k] == v for k, v in where.items())}


def test_downstream_expansion_follows_dependencies_level_by_level(shop):
    one = run_tool("expand_topology", shop, node="web", direction="downstream", depth=1)
    assert _names(one) == {"web", "checkout", "redis"}
    two = run_tool("expand_topology", shop, node="web", direction="downstream", depth=2)
    assert _names(two, distance=2) == {"payments", "postgres", "queue"}
    three = run_tool("expand_topology", shop, node="web", direction="downstream", depth=3)
    assert _names(three, distance=3) == {"psp"}
    assert "lb" not in _names(three)  # lb calls web: upstream, not downstream
    assert {"from": "checkout", "to": "payments", "protocol": "grpc"} in three["edges"]


def test_upstream_expansion_finds_callers(shop):
    result = run_tool("expand_topology", shop, node="postgres", direction="upstream", depth=2)
    assert _names(result, distance=1) == {"checkout", "payments"}
    assert _names(result, distance=2) == {"web"}
    assert _names(result) - {"postgres"} == _names(result, relation="upstream")
    deeper = run_tool("expand_topology", shop, node="postgres", direction="upstream", depth=3)
    assert _names(deeper, distance=3) == {"lb"}


def test_both_directions_stay_on_each_side(shop):
    result = run_tool("expand_topology", shop, node="payments", direction="both", depth=1)
    assert _names(result, relation="upstream") == {"checkout"}
    assert _names(result, relation="downstream") == {"postgres", "psp"}
    # redis is a sibling dependency of checkout, neither a caller nor a dependency of payments
    assert "redis" not in _names(run_tool("expand_topology", shop, node="payments", depth=2))


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"node": "web", "depth": 4}, "depth must be between 1 and 3"),
        ({"node": "web", "depth": 0}, "depth must be between 1 and 3"),
        ({"node": "web", "direction": "sideways"}, "direction must be one of"),
        ({"node": "no-such-service"}, "no topology node"),
    ],
)
def test_bad_expansion_requests_are_explained(shop, arguments, message):
    with pytest.raises(ToolError, match=message):
        run_tool("expand_topology", shop, **arguments)


def test_find_node_is_fuzzy_on_names_labels_and_devices(shop):
    assert run_tool("find_topology_node", shop, query="paymnts")["matches"][0]["name"] == "payments"
    by_label = run_tool("find_topology_node", shop, query="rabbitmq")["matches"][0]
    assert (by_label["name"], by_label["matched"]) == ("queue", "label engine")
    assert run_tool("find_topology_node", shop, query="pg-01")["matches"][0]["name"] == "postgres"
    exact = run_tool("find_topology_node", shop, query="checkout")["matches"]
    assert exact[0] == {**exact[0], "name": "checkout", "score": 1.0}
    assert run_tool("find_topology_node", shop, query="kubernetes-operator")["matches"] == []
    with pytest.raises(ToolError, match="must not be empty"):
        run_tool("find_topology_node", shop, query="  ")


def test_correlation_orders_by_time_and_puts_the_culprit_first(shop):
    incident = Incident.objects.get(organization=shop, status="firing")
    result = run_tool("correlate_incident", shop, incident_id=incident.pk)
    times = [item["at"] for item in result["timeline"]]
    assert times == sorted(times)
    first = result["earliest_deviation"]
    assert (first["kind"], first["resource_name"], first["actor"]) == ("change", "payments", "jonas")
    assert first["after"]["labels"]["db_pool_size"] == "5"
    assert result["suspect_changes"][0]["resource_name"] == "payments"
    assert {"CheckoutHighErrorRate", "PaymentsLatencyHigh"} <= {
        i["name"] for i in result["timeline"] if i["kind"] == "alert"
    }
    # the deploys of 6 hours and 3 days ago are outside ±30 minutes
    assert all(item.get("resource_name") != "web" for item in result["timeline"])
    assert {"checkout", "payments", "postgres"} <= {n["name"] for n in result["neighbours"]}


def test_correlation_window_and_relatedness(org):
    now = timezone.now()
    api = TopologyNode.objects.create(organization=org, name="api")
    db = TopologyNode.objects.create(organization=org, name="db", kind="database")
    TopologyNode.objects.create(organization=org, name="billing")
    TopologyEdge.objects.create(organization=org, source=api, target=db, protocol="postgresql")
    incident = Incident.objects.create(
        organization=org,
        title="api slow",
        started_at=now - dt.timedelta(minutes=40),
        affected_services=["api"],
    )
    Alert.objects.create(
        organization=org,
        incident=incident,
        name="ApiSlow",
        fingerprint="a1",
        labels={"alertname": "ApiSlow", "service": "api"},
        starts_at=incident.started_at,
    )

    def change(name, minutes_before, node):
        ChangeEvent.objects.create(
            organization=org,
            occurred_at=incident.started_at - dt.timedelta(minutes=minutes_before),
            actor_name="ops",
            action="update",
            resource_type="topology_node",
            resource_id=str(node.pk),
            resource_name=name,
            summary=f"ops changed {name}",
        )

    other = Incident.objects.create(organization=org, title="db disk", started_at=incident.started_at)
    for name, service, minutes_after in (("DbDiskFull", "db", 5), ("BillingDown", "billing", 6)):
        Alert.objects.create(
            organization=org,
            incident=other,
            name=name,
            fingerprint=name,
            labels={"alertname": name, "service": service},
            starts_at=incident.started_at + dt.timedelta(minutes=minutes_after),
        )
    change("db", 25, db)  # related, in the window: earliest deviation
    change("billing", 10, TopologyNode.objects.get(name="billing"))  # in the window, unrelated
    change("db", 45, db)  # related but outside ±30 minutes
    result = run_tool("correlate_incident", org, incident_id=incident.pk)
    kinds = [
        (i["kind"], i.get("resource_name") or i.get("name"), i.get("related")) for i in result["timeline"]
    ]
    assert kinds == [
        ("change", "db", True),
        ("change", "billing", False),
        ("alert", "ApiSlow", None),
        ("alert", "DbDiskFull", None),  # a neighbour's alert; billing is no neighbour of api
    ]
    assert [i["this_incident"] for i in result["timeline"] if i["kind"] == "alert"] == [True, False]
    assert [s["resource_name"] for s in result["suspect_changes"]] == ["db"]
    assert result["suspect_changes"][0]["minutes_before_start"] == 25.0


def test_topology_tools_never_cross_tenants(shop, other_org):
    incident = Incident.objects.get(organization=shop, status="firing")
    assert run_tool("find_topology_node", other_org, query="payments")["matches"] == []
    with pytest.raises(ToolError, match="no topology node"):
        run_tool("expand_topology", other_org, node="payments")
    with pytest.raises(ToolError, match="no topology node"):
        run_tool(
            "expand_topology", other_org, node=str(TopologyNode.objects.get(organization=shop, name="web").pk)
        )
    with pytest.raises(ToolError, match="no incident"):
        run_tool("correlate_incident", other_org, incident_id=incident.pk)


def test_expansion_costs_one_query_per_level(shop, django_assert_max_num_queries):
    with django_assert_max_num_queries(6):
        run_tool("expand_topology", shop, node="lb", direction="downstream", depth=3)
