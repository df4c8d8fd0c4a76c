"""From a tool's `device` argument to a transport, within the caller's organization only."""

from __future__ import annotations

from agents_app.toolsets.hosts.local import LocalTransport
from agents_app.toolsets.hosts.ssh import SSHSettings, SSHTransport
from agents_app.toolsets.hosts.transport import Transport
from ops_app.estate.devices import is_documentation_address, unreachable_example
from ops_app.models import Device


class DeviceError(LookupError):
    """The device cannot be used: unknown in this organization, or incompletely configured."""


async def resolve_device(organization_id: int, reference: str | int) -> Device:
    """Find a device by id or name in one organization; another tenant's device is "not found"."""
    text = str(reference).strip()
    if not text:
        raise DeviceError("no device given")
    devices = Device.objects.for_organization(organization_id)
    device = await devices.filter(name=text).afirst()
    if device is None and text.isdigit():
        device = await devices.filter(pk=int(text)).afirst()
    if device is None:
        raise DeviceError(f"device {text!r} not found in this organization")
    return device


def transport_for(device: Device) -> Transport:
    if device.transport == Device.Transport.LOCAL:
        return LocalTransport()
    if not device.address:
        raise DeviceError(f"device {device.name!r} uses SSH but has no address")
    if not device.ssh_username:
        raise DeviceError(f"device {device.name!r} uses SSH but has no SSH user name")
    if is_documentation_address(device.address):
        raise DeviceError(unreachable_example(device))
    settings = SSHSettings(
        host=device.address,
        port=device.ssh_port,
        username=device.ssh_username,
        private_key=device.ssh_private_key,
        password=device.ssh_password,
        known_hosts=device.ssh_known_hosts,
        host_key_policy=device.ssh_host_key_policy,
    )

    async def remember_host_key(line: str) -> None:
        # Trust on first use: record the key only if nobody stored one meanwhile.
        await Device.objects.filter(pk=device.pk, ssh_known_hosts="").aupdate(ssh_known_hosts=line)

    return SSHTransport(settings, on_new_host_key=remember_host_key)
