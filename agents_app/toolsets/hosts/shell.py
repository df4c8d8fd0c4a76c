"""`host_bash`: one read-only command line on a device, checked by the shell policy first
(`shell_policy/`, docs/hosts.md)."""

from __future__ import annotations

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.hosts import shell_policy
from agents_app.toolsets.hosts.running import device_and_transport, protected_folders, run_with

BASH_OUTPUT_CAP = 16 * 1024


async def host_bash(ctx: ToolContext, device: str, command: str) -> dict:
    if not isinstance(command, str):
        raise ToolError("command must be a string")
    target, transport = await device_and_transport(ctx, device)
    try:
        script = shell_policy.check(command, protected=protected_folders(target))
    except shell_policy.PolicyRefusal as refusal:
        raise ToolError(
            f"{refusal} (host_bash is read-only; see the allowed programs in docs/hosts.md)"
        ) from None
    result = await run_with(target, transport, script, max_output=BASH_OUTPUT_CAP)
    report: dict = {
        "device": target.name,
        "command": result.command,
        "exit_status": result.exit_status,
        "stdout": result.stdout,
        "stderr": result.stderr[-4000:],
        "duration_ms": result.duration_ms,
    }
    if result.timed_out:
        report["timed_out"] = True
    if result.truncated:
        report["truncated"] = (
            f"output truncated to the first {BASH_OUTPUT_CAP} bytes of {result.stdout_bytes} (stdout) and "
            f"{result.stderr_bytes} (stderr); narrow the command (grep, head, tail)"
        )
    return report
