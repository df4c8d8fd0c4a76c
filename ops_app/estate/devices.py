"""The Ongrid host as a device (transport "local").

Host tools on a local device run on the machine that serves every tenant, so such a device is
platform business: it exists only when the operator sets ONGRID_ALLOW_LOCAL_DEVICE, and only
platform staff (superusers) create or edit one. The setting is checked on every save of a Device
(a pre_save hook, so no path - admin, API, script - gets around it), the staff rule in the admin,
and the host tools refuse a local device while the setting is off (agents_app.toolsets.hosts.tools).
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models.signals import pre_save

from ops_app.models import Device
from ops_app.tenancy.scoping import sees_all_tenants

DISABLED = (
    "Local devices (the Ongrid host itself) are disabled on this installation; "
    "the operator enables them with ONGRID_ALLOW_LOCAL_DEVICE."
)
STAFF_ONLY = "Only platform staff may create or edit a local device (the Ongrid host itself)."

# Address blocks reserved for examples (RFC 5737, RFC 3849): routed nowhere, so nothing ever answers.
# The demo estate's devices live there (ops_app.estate.demo).
DOCUMENTATION_NETWORKS = tuple(
    ipaddress.ip_network(block)
    for block in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
)


def is_documentation_address(address: str) -> bool:
    """True for an address in a block reserved for documentation, which no host can have."""
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip in network for network in DOCUMENTATION_NETWORKS if network.version == ip.version)


def unreachable_example(device: Device) -> str:
    """Why a tool does not even try a device with a documentation address (the demo's)."""
    return (
        f"device {device.name!r} has the documentation address {device.address} (reserved for "
        "examples, routed nowhere), so no command can reach it: it is part of the demo estate. Give it "
        "its real address in the admin, or ask about a device Ongrid can reach."
    )


def local_devices_enabled() -> bool:
    return bool(settings.CONFIG.allow_local_device)


def local_device_refusal(user) -> str | None:
    """Why `user` may not create or edit a local device, or None when they may."""
    if not local_devices_enabled():
        return DISABLED
    if not sees_all_tenants(user):
        return STAFF_ONLY
    return None


def _refuse_disabled_local(sender, instance, **kwargs) -> None:
    if instance.transport != Device.Transport.LOCAL or local_devices_enabled():
        return
    raise ValidationError({"transport": DISABLED})


def connect() -> None:
    pre_save.connect(_refuse_disabled_local, sender=Device, dispatch_uid="ongrid-local-device-guard")
