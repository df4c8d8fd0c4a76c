"""The host toolset's network probes, run from the device: HTTP, DNS and TCP (docs/hosts.md)."""

from __future__ import annotations

import re

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.hosts import parsers
from agents_app.toolsets.hosts.running import bounded, require_ok, run_on_device
from agents_app.toolsets.hosts.transport import Script

HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?$|^[0-9a-fA-F:.]+$")


async def host_probe_http(
    ctx: ToolContext, device: str, url: str, timeout_seconds: float = 10, follow_redirects: bool = False
) -> dict:
    if not isinstance(url, str) or not re.match(r"^https?://[^\s]+$", url):
        raise ToolError("url must start with http:// or https:// and contain no spaces")
    seconds = bounded(timeout_seconds, "timeout_seconds", 1, 30, 10)
    argv = [
        "curl",
        "-sS",
        "-k",
        "-o",
        "/dev/null",
        "--max-time",
        f"{seconds:g}",
        "-w",
        parsers.CURL_WRITE_OUT,
    ]
    if follow_redirects:
        argv += ["-L", "--max-redirs", "5"]
    name, result = await run_on_device(ctx, device, Script.command(*argv, url), time_limit=seconds + 5)
    if result.timed_out or "http_code=" not in result.stdout:
        raise ToolError(result.error_text())
    report = parsers.parse_curl(result.stdout)
    report = {"device": name, "url": url, "ok": result.ok and 200 <= report["status"] < 400, **report}
    if not result.ok:
        report["error"] = result.stderr.strip()[-500:] or f"curl exited with status {result.exit_status}"
    return report


async def host_probe_dns(ctx: ToolContext, device: str, name: str, record_type: str = "ANY") -> dict:
    if not isinstance(name, str) or not HOSTNAME.match(name):
        raise ToolError("name must be a host name or an IP address")
    record_type = (record_type or "ANY").upper()
    getent = {"ANY": "ahosts", "A": "ahostsv4", "AAAA": "ahostsv6"}
    if record_type in getent:
        device_name, result = await run_on_device(
            ctx, device, Script.command("getent", getent[record_type], name)
        )
        if result.exit_status == 2:
            return {
                "device": device_name,
                "name": name,
                "record_type": record_type,
                "found": False,
                "addresses": [],
                "message": "the host's resolver found no such name",
            }
        require_ok(result)
        answer = parsers.parse_getent_hosts(result.stdout)
        return {
            "device": device_name,
            "name": name,
            "record_type": record_type,
            "found": True,
            "resolver": "system",
            "duration_ms": result.duration_ms,
            **answer,
        }
    if record_type not in {"MX", "TXT", "CNAME", "NS", "SOA", "SRV"}:
        raise ToolError(f"unsupported record_type {record_type!r}")
    script = Script.command("dig", "+noall", "+answer", "+time=3", "+tries=1", name, record_type)
    device_name, result = await run_on_device(ctx, device, script)
    require_ok(result)
    records = parsers.parse_dig_answer(result.stdout)
    return {
        "device": device_name,
        "name": name,
        "record_type": record_type,
        "found": bool(records),
        "resolver": "dig",
        "records": records,
    }


TCP_PROBE = 'start=$EPOCHREALTIME; exec 3<>"/dev/tcp/$1/$2" || exit 1; echo "$start $EPOCHREALTIME"'


async def host_probe_tcp(
    ctx: ToolContext, device: str, host: str, port: int, timeout_seconds: float = 5
) -> dict:
    if not isinstance(host, str) or not HOSTNAME.match(host):
        raise ToolError("host must be a host name or an IP address")
    port = int(bounded(port, "port", 1, 65535, 0))
    seconds = bounded(timeout_seconds, "timeout_seconds", 1, 30, 5)
    # A fixed bash program; host and port are positional parameters, never part of the code.
    script = Script.command("timeout", f"{seconds:g}", "bash", "-c", TCP_PROBE, "tcp-probe", host, str(port))
    name, result = await run_on_device(ctx, device, script, time_limit=seconds + 5)
    base = {"device": name, "host": host, "port": port}
    if result.ok:
        try:
            start, end = (float(v) for v in result.stdout.split()[:2])
        except ValueError:
            raise ToolError(f"unexpected probe output: {result.stdout[:200]!r}") from None
        return {**base, "open": True, "connect_ms": round((end - start) * 1000, 2)}
    if result.exit_status == 124:
        return {**base, "open": False, "error": f"no answer within {seconds:g}s (filtered or host down)"}
    if result.exit_status == 1:
        message = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "connection failed"
        return {**base, "open": False, "error": re.sub(r"^.*?: line \d+: ", "", message)}
    raise ToolError(result.error_text())
