"""The Ongrid host as a device (transport "local").

Host tools on a local device run on the machine that serves every tenant, so such a device is
platform business: it exists only when the operator sets ONGRID_ALLOW_LOCAL_DEVICE, and only
platform staff (superusers) create or edit one. The setting is checked on every save of a Device
(a pre_save hook, so no path - admin, API, script - gets around it), the staff rule in the admin,
and the host tools refuse a local device while the setting is off (agents_app.toolsets.hosts.tools).
"""

from __future__ import annotations

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
