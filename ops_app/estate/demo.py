"""A small, realistic demo estate so a new user's first chat has something to look at.

A web shop: load balancer → web → checkout → payments, with PostgreSQL, Redis and a RabbitMQ
queue behind them. Twenty minutes ago someone lowered the payments service's database pool from
50 to 5 connections; eight minutes later checkout started answering 502. The change, the alerts
and the topology are all there for the investigator to connect.

Devices other than the manager itself use documentation addresses (192.0.2.0/24, RFC 5737): they
look real to the tools but are never reachable.
"""

from __future__ import annotations

import datetime as dt

from django.db import transaction
from django.utils import timezone

from ops_app.estate.change_events import snapshot, suppressed
from ops_app.estate.devices import local_devices_enabled
from ops_app.models import (
    Alert,
    AlertRule,
    ChangeEvent,
    Device,
    Incident,
    Organization,
    Severity,
    TopologyEdge,
    TopologyNode,
)

DEVICES = [
    # name, address, kind, labels
    ("ongrid-manager", "127.0.0.1", Device.Kind.SERVER, {"role": "ongrid", "env": "prod"}),
    ("lb-01", "192.0.2.10", Device.Kind.VM, {"role": "load-balancer", "env": "prod"}),
    ("web-01", "192.0.2.11", Device.Kind.VM, {"role": "web", "env": "prod"}),
    ("web-02", "192.0.2.12", Device.Kind.VM, {"role": "web", "env": "prod"}),
    ("checkout-01", "192.0.2.21", Device.Kind.VM, {"role": "checkout", "env": "prod"}),
    ("payments-01", "192.0.2.31", Device.Kind.VM, {"role": "payments", "env": "prod"}),
    ("pg-01", "192.0.2.41", Device.Kind.DATABASE, {"role": "postgres-primary", "env": "prod"}),
    ("redis-01", "192.0.2.51", Device.Kind.VM, {"role": "cache", "env": "prod"}),
    ("mq-01", "192.0.2.61", Device.Kind.VM, {"role": "queue", "env": "prod"}),
]

NODES = [
    # name, kind, device, labels, description
    ("lb", TopologyNode.Kind.LOAD_BALANCER, "lb-01", {"tier": "edge"}, "HAProxy in front of the shop."),
    ("web", TopologyNode.Kind.SERVICE, "web-01", {"tier": "frontend", "team": "storefront"}, "Storefront."),
    (
        "checkout",
        TopologyNode.Kind.SERVICE,
        "checkout-01",
        {"tier": "backend", "team": "orders"},
        "Cart, orders.",
    ),
    (
        "payments",
        TopologyNode.Kind.SERVICE,
        "payments-01",
        {"tier": "backend", "team": "payments", "version": "2.5.0", "db_pool_size": "5"},
        "Card payments through the PSP.",
    ),
    ("postgres", TopologyNode.Kind.DATABASE, "pg-01", {"engine": "postgresql-15"}, "Orders and payments DB."),
    ("redis", TopologyNode.Kind.CACHE, "redis-01", {"engine": "redis-7"}, "Sessions and carts."),
    ("queue", TopologyNode.Kind.QUEUE, "mq-01", {"engine": "rabbitmq"}, "Order events for fulfilment."),
    (
        "psp",
        TopologyNode.Kind.EXTERNAL,
        None,
        {"vendor": "payment service provider"},
        "External card gateway.",
    ),
]

EDGES = [
    ("lb", "web", "http"),
    ("web", "checkout", "http"),
    ("web", "redis", "redis"),
    ("checkout", "payments", "grpc"),
    ("checkout", "postgres", "postgresql"),
    ("checkout", "redis", "redis"),
    ("checkout", "queue", "amqp"),
    ("payments", "postgres", "postgresql"),
    ("payments", "psp", "https"),
]

RULES = [
    (
        "CheckoutHighErrorRate",
        'sum(rate(http_requests_total{service="checkout",code=~"5.."}[5m])) '
        '/ sum(rate(http_requests_total{service="checkout"}[5m])) > 0.05',
        "5m",
        Severity.CRITICAL,
        {"service": "checkout"},
    ),
    (
        "PaymentsLatencyHigh",
        "histogram_quantile(0.99, sum by (le) "
        '(rate(grpc_server_handling_seconds_bucket{service="payments"}[5m]))) > 1',
        "5m",
        Severity.HIGH,
        {"service": "payments"},
    ),
    (
        "PaymentsDbPoolExhausted",
        'db_pool_waiting_connections{service="payments"} > 0',
        "2m",
        Severity.HIGH,
        {"service": "payments"},
    ),
    (
        "HostHighLoad",
        "node_load5 / count by (instance) (node_cpu_seconds_total{mode='idle'}) > 2",
        "10m",
        Severity.WARNING,
        {},
    ),
    (
        "DiskAlmostFull",
        'node_filesystem_avail_bytes{fstype!~"tmpfs|overlay"} / node_filesystem_size_bytes < 0.1',
        "15m",
        Severity.WARNING,
        {},
    ),
]


def load_demo_estate(organization: Organization) -> bool:
    """Create the demo estate for `organization` if it has no devices yet; True when it did."""
    if Device.objects.filter(organization=organization).exists():
        return False
    now = timezone.now().replace(microsecond=0)
    with transaction.atomic(), suppressed():
        devices = _devices(organization)
        nodes = _nodes(organization, devices)
        for source, target, protocol in EDGES:
            TopologyEdge.objects.create(
                organization=organization, source=nodes[source], target=nodes[target], protocol=protocol
            )
        for name, expression, for_duration, severity, labels in RULES:
            AlertRule.objects.create(
                organization=organization,
                name=name,
                expression=expression,
                for_duration=for_duration,
                severity=severity,
                labels={**labels, "severity": severity},
                source=AlertRule.Source.DEMO,
            )
        _history(organization, devices, nodes, now)
        _incident(organization, devices, now)
    return True


def _devices(organization: Organization) -> dict[str, Device]:
    devices = {}
    for name, address, kind, labels in DEVICES:
        # The Ongrid host is a device only where the operator allows it (bin/start does).
        local = name == "ongrid-manager" and local_devices_enabled()
        devices[name] = Device.objects.create(
            organization=organization,
            name=name,
            address=address,
            kind=kind,
            labels=labels,
            transport=Device.Transport.LOCAL if local else Device.Transport.SSH,
            ssh_username="" if local else "ongrid",
            online=local,
        )
    return devices


def _nodes(organization: Organization, devices: dict[str, Device]) -> dict[str, TopologyNode]:
    return {
        name: TopologyNode.objects.create(
            organization=organization,
            name=name,
            kind=kind,
            device=devices.get(device) if device else None,
            labels=labels,
            description=description,
        )
        for name, kind, device, labels, description in NODES
    }


def _history(organization, devices, nodes, now: dt.datetime) -> None:
    """Curated change history: routine changes days ago, the culprit 20 minutes ago."""
    payments = nodes["payments"]
    events = [
        (
            now - dt.timedelta(days=3, hours=2),
            "deploy-bot",
            "update",
            "topology_node",
            nodes["web"],
            {"version": "4.1.0"},
            {"version": "4.2.0"},
        ),
        (
            now - dt.timedelta(days=1, hours=5),
            "maria",
            "update",
            "device",
            devices["pg-01"],
            {"labels": {"role": "postgres-primary"}},
            {"labels": {"role": "postgres-primary", "env": "prod"}},
        ),
        (
            now - dt.timedelta(hours=6),
            "deploy-bot",
            "update",
            "topology_node",
            nodes["checkout"],
            {"version": "7.3.1"},
            {"version": "7.3.2"},
        ),
        (
            now - dt.timedelta(minutes=20),
            "jonas",
            "update",
            "topology_node",
            payments,
            {"labels": {**payments.labels, "version": "2.4.1", "db_pool_size": "50"}},
            {"labels": payments.labels},
        ),
    ]
    for when, actor, action, resource_type, obj, before, after in events:
        changed = ", ".join(after)
        ChangeEvent.objects.create(
            organization=organization,
            occurred_at=when,
            actor_name=actor,
            action=action,
            resource_type=resource_type,
            resource_id=str(obj.pk),
            resource_name=str(obj),
            summary=f"{actor} changed {resource_type.replace('_', ' ')} {obj}: {changed}",
            before=before,
            after=after,
        )
    rule = AlertRule.objects.get(organization=organization, name="DiskAlmostFull")
    ChangeEvent.objects.create(
        organization=organization,
        occurred_at=now - dt.timedelta(days=2),
        actor_name="maria",
        action="create",
        resource_type="alert_rule",
        resource_id=str(rule.pk),
        resource_name=rule.name,
        summary=f"maria created alert rule {rule.name}",
        after=snapshot(rule),
    )


def _incident(organization, devices, now: dt.datetime) -> None:
    started = now - dt.timedelta(minutes=12)
    incident = Incident.objects.create(
        organization=organization,
        title="Checkout returns 502 for 9% of requests",
        summary="Checkout's calls to payments time out waiting for a database connection; "
        "customers cannot complete orders.",
        severity=Severity.CRITICAL,
        status=Incident.Status.FIRING,
        started_at=started,
        affected_services=["checkout", "payments"],
        device=devices["checkout-01"],
        source=Incident.Source.DEMO,
        fingerprint="demo-checkout-502",
    )
    alerts = [
        (
            "PaymentsDbPoolExhausted",
            Severity.HIGH,
            "payments",
            "payments-01:9100",
            started - dt.timedelta(minutes=2),
            "Payments waits for a free PostgreSQL connection (pool size 5).",
        ),
        (
            "PaymentsLatencyHigh",
            Severity.HIGH,
            "payments",
            "payments-01:9100",
            started - dt.timedelta(minutes=1),
            "p99 of payments gRPC calls is 4.8 s.",
        ),
        (
            "CheckoutHighErrorRate",
            Severity.CRITICAL,
            "checkout",
            "checkout-01:9100",
            started,
            "9% of checkout requests answer 502.",
        ),
    ]
    for index, (name, severity, service, instance, starts_at, summary) in enumerate(alerts):
        Alert.objects.create(
            organization=organization,
            incident=incident,
            name=name,
            fingerprint=f"demo{index:012x}",
            severity=severity,
            labels={"alertname": name, "service": service, "instance": instance, "severity": severity},
            annotations={"summary": summary},
            starts_at=starts_at,
        )
    incident.started_at = min(a[4] for a in alerts)
    incident.save(update_fields=["started_at"])
