"""`host_restart_service`: restart one allowlisted systemd service on one device, once the review
gate approved it; and its account for the reviewer (docs/review-gate.md)."""

from __future__ import annotations

import re

from django.conf import settings

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.hosts.running import device_and_transport, run_with
from agents_app.toolsets.hosts.transport import Script

RESTART_TIME_LIMIT = 45.0
SERVICE_NAME = re.compile(r"^[A-Za-z0-9@_.:-]{1,200}$")


def _check_service(service: str) -> str:
    allowed = settings.CONFIG.restartable_services
    if not isinstance(service, str) or not SERVICE_NAME.match(service):
        raise ToolError("service must be a plain systemd unit name, e.g. nginx")
    if service not in allowed:
        listing = ", ".join(allowed) or "none"
        raise ToolError(
            f"{service!r} is not in the restartable services allowlist "
            f"(ONGRID_RESTARTABLE_SERVICES: {listing})."
        )
    return service


def describe_host_restart_service(arguments: dict) -> dict:
    service = _check_service(arguments.get("service", ""))
    device = str(arguments.get("device", ""))
    return {"action": f"systemctl restart {service}", "target": device, "blast_radius": "single_device"}


async def host_restart_service(ctx: ToolContext, device: str, service: str, reason: str) -> dict:
    _check_service(service)
    target, transport = await device_and_transport(ctx, device)
    script = Script.command("systemctl", "restart", service)
    result = await run_with(target, transport, script, time_limit=RESTART_TIME_LIMIT, max_output=16 * 1024)
    if not result.ok:
        raise ToolError(result.error_text())
    return {
        "device": target.name,
        "service": service,
        "restarted": True,
        "duration_ms": result.duration_ms,
        "output": (result.stdout + result.stderr).strip()[-2000:],
    }
