"""Running one fixed command on a device for a host tool: the device resolved inside the caller's
organization only, its transport, the time and output limits, and on the Ongrid host itself the
folders no tool may read (docs/hosts.md, docs/security.md)."""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

from django.conf import settings

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.hosts import shell_policy
from agents_app.toolsets.hosts.devices import DeviceError, resolve_device, transport_for
from agents_app.toolsets.hosts.transport import CommandResult, Script, Transport, TransportError
from ops_app.estate.devices import DISABLED as LOCAL_DISABLED
from ops_app.estate.devices import local_devices_enabled
from ops_app.models import Device

log = logging.getLogger(__name__)

COMMAND_TIMEOUT = 20.0
PARSE_OUTPUT_CAP = 4 * 1024 * 1024


async def device_and_transport(ctx: ToolContext, device: str | int) -> tuple[Device, Transport]:
    """Resolve `device` in the caller's organization only, and pick its transport."""
    try:
        target = await resolve_device(ctx.organization_id, device)
        if target.transport == Device.Transport.LOCAL and not local_devices_enabled():
            raise DeviceError(f"device {target.name!r} is the Ongrid host itself: {LOCAL_DISABLED}")
        return target, transport_for(target)
    except DeviceError as exc:
        raise ToolError(str(exc)) from None


async def run_with(
    target: Device,
    transport: Transport,
    script: Script,
    *,
    max_output: int = PARSE_OUTPUT_CAP,
    time_limit: float = COMMAND_TIMEOUT,
) -> CommandResult:
    try:
        return await transport.run(script, time_limit=time_limit, max_output=max_output)
    except TransportError as exc:
        # Transport messages are built by Ongrid and scrubbed of credentials (see hosts.ssh).
        log.warning("cannot run a command on device %s (id %s): %s", target.name, target.pk, exc)
        raise ToolError(f"{target.name}: {exc}") from None


async def run_on_device(
    ctx: ToolContext,
    device: str | int,
    script: Script,
    *,
    max_output: int = PARSE_OUTPUT_CAP,
    time_limit: float = COMMAND_TIMEOUT,
) -> tuple[str, CommandResult]:
    """Resolve `device` in the caller's organization and run `script` there."""
    target, transport = await device_and_transport(ctx, device)
    result = await run_with(target, transport, script, max_output=max_output, time_limit=time_limit)
    return target.name, result


def protected_folders(device: Device) -> list[str]:
    """On the Ongrid host itself (local transport), the folders no tool may read: Ongrid's data
    folder (database, generated secrets), its SQLite database's folder, its code, its virtualenv,
    and /proc and /sys (the server's own environment and memory). Empty for other devices."""
    if device.transport != Device.Transport.LOCAL:
        return []
    folders = [str(settings.CONFIG.data_dir), str(settings.BASE_DIR), sys.prefix, "/proc", "/sys"]
    database = settings.DATABASES["default"]
    if database["ENGINE"].endswith("sqlite3") and str(database["NAME"]).startswith("/"):
        folders.append(str(Path(database["NAME"]).parent))
    return folders


def local_path(target: Device, path: str) -> tuple[str, list[str]]:
    """For a path a fixed tool reads on `target`: on the Ongrid host, refuse it inside a
    protected folder and return its real path with the protected roots it contains (the tool
    excludes them); elsewhere the path unchanged and no exclusions."""
    roots = shell_policy.protected_roots(protected_folders(target))
    if not roots:
        return path, []
    try:
        shell_policy.check_local_path(path, roots)
    except shell_policy.PolicyRefusal as refusal:
        raise ToolError(str(refusal)) from None
    real = shell_policy.resolve_local(path)[1]
    return real, [root for root in roots if shell_policy.inside(root, real) and root != real]


def glob_literal(path: str) -> str:
    """A path as an fnmatch pattern matching only itself (du --exclude, find -path)."""
    return re.sub(r"([*?\[])", r"[\1]", path)


def require_ok(result: CommandResult) -> None:
    if not result.ok:
        raise ToolError(result.error_text())


def absolute_path(path: str, what: str = "path") -> str:
    if not isinstance(path, str) or not path.startswith("/") or "\0" in path or "\n" in path:
        raise ToolError(f"{what} must be an absolute path (starting with /)")
    return path


def bounded(value, name: str, low: float, high: float, default: float) -> float:
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ToolError(f"{name} must be a number between {low} and {high}") from None
    if not low <= number <= high:
        raise ToolError(f"{name} must be between {low} and {high}, not {value}")
    return number


def stderr_warnings(result: CommandResult, limit: int = 5) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()][:limit]
