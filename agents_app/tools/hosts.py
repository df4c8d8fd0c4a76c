"""Host inspection tools (docs/hosts.md): read-only views of one device, over SSH or on the Ongrid host.

Every tool takes `device` (id or name), resolved inside the caller's organization only, runs
fixed argv commands through the device's transport with a timeout and an output cap, and turns
the output into a compact result. When the command fails, the tool error carries the command's
own message so the model can tell "permission denied" from "no such file".
"""

from __future__ import annotations

import logging
import re
import sys
from pathlib import Path

from django.conf import settings

from agents_app import shell_policy
from agents_app.hosts import parsers
from agents_app.hosts.devices import DeviceError, resolve_device, transport_for
from agents_app.hosts.transport import CommandResult, Script, Transport, TransportError
from agents_app.tools.base import ToolContext, ToolError, tool
from ops_app.estate.devices import DISABLED as LOCAL_DISABLED
from ops_app.estate.devices import local_devices_enabled
from ops_app.models import Device

log = logging.getLogger(__name__)

COMMAND_TIMEOUT = 20.0
TOOL_TIMEOUT = 35.0
BASH_OUTPUT_CAP = 16 * 1024
PARSE_OUTPUT_CAP = 4 * 1024 * 1024
FORBIDDEN_ROOTS = ("/proc", "/sys", "/dev")
HOSTNAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?$|^[0-9a-fA-F:.]+$")

DEVICE = {"type": "string", "description": "Device name or id (from query_devices)."}


def _schema(properties: dict, required: list[str]) -> dict:
    return {
        "type": "object",
        "properties": {"device": DEVICE, **properties},
        "required": ["device", *required],
        "additionalProperties": False,
    }


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


def _local_path(target: Device, path: str) -> tuple[str, list[str]]:
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


def _glob_literal(path: str) -> str:
    """A path as an fnmatch pattern matching only itself (du --exclude, find -path)."""
    return re.sub(r"([*?\[])", r"[\1]", path)


def _require_ok(result: CommandResult) -> None:
    if not result.ok:
        raise ToolError(result.error_text())


def _absolute_path(path: str, what: str = "path") -> str:
    if not isinstance(path, str) or not path.startswith("/") or "\0" in path or "\n" in path:
        raise ToolError(f"{what} must be an absolute path (starting with /)")
    return path


def _bounded(value, name: str, low: float, high: float, default: float) -> float:
    if value is None:
        return default
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ToolError(f"{name} must be a number between {low} and {high}") from None
    if not low <= number <= high:
        raise ToolError(f"{name} must be between {low} and {high}, not {value}")
    return number


def _stderr_warnings(result: CommandResult, limit: int = 5) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.strip()][:limit]


@tool(
    "get_host_load",
    "Load averages (1/5/15 min), CPU count, memory and swap use, process counts and uptime of a host.",
    _schema({}, []),
    timeout=TOOL_TIMEOUT,
)
async def get_host_load(ctx: ToolContext, device: str) -> dict:
    script = Script(((("cat", "/proc/loadavg", "/proc/uptime", "/proc/meminfo"),), (("nproc",),)), (";",))
    name, result = await run_on_device(ctx, device, script)
    _require_ok(result)
    try:
        return {"device": name, **parsers.parse_load(result.stdout)}
    except parsers.ParseError as exc:
        raise ToolError(f"{name}: cannot read the load ({exc})") from None


@tool(
    "get_host_processes",
    "Top processes of a host by CPU or resident memory (pid, user, cpu %, mem %, RSS, age, command).",
    _schema(
        {
            "sort_by": {"type": "string", "enum": ["cpu", "rss"], "default": "cpu"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        },
        [],
    ),
    timeout=TOOL_TIMEOUT,
)
async def get_host_processes(ctx: ToolContext, device: str, sort_by: str = "cpu", limit: int = 10) -> dict:
    if sort_by not in ("cpu", "rss"):
        raise ToolError("sort_by must be 'cpu' or 'rss'")
    limit = int(_bounded(limit, "limit", 1, 50, 10))
    order = "-pcpu" if sort_by == "cpu" else "-rss"
    script = Script.command("ps", "-eo", parsers.PS_COLUMNS, f"--sort={order}")
    name, result = await run_on_device(ctx, device, script)
    _require_ok(result)
    try:
        processes = parsers.parse_processes(result.stdout)
    except parsers.ParseError as exc:
        raise ToolError(f"{name}: {exc}") from None
    key = "cpu_percent" if sort_by == "cpu" else "rss_bytes"
    processes.sort(key=lambda p: p[key], reverse=True)
    return {
        "device": name,
        "sort_by": sort_by,
        "total_processes": len(processes),
        "processes": processes[:limit],
    }


@tool(
    "host_du_summary",
    "Disk usage under a directory, biggest entries first (du on one filesystem). Use it to find what "
    "fills a disk.",
    _schema(
        {
            "path": {"type": "string", "description": "Absolute directory path."},
            "depth": {"type": "integer", "minimum": 1, "maximum": 3, "default": 1},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        },
        ["path"],
    ),
    timeout=TOOL_TIMEOUT,
)
async def host_du_summary(ctx: ToolContext, device: str, path: str, depth: int = 1, limit: int = 10) -> dict:
    path = _absolute_path(path)
    depth = int(_bounded(depth, "depth", 1, 3, 1))
    limit = int(_bounded(limit, "limit", 1, 50, 10))
    target, transport = await device_and_transport(ctx, device)
    path, excluded = _local_path(target, path)
    excludes = [f"--exclude={_glob_literal(root)}" for root in excluded]
    script = Script.command("du", "-a", "-x", "-B1", f"--max-depth={depth}", *excludes, "--", path)
    result = await run_with(target, transport, script)
    name = target.name
    if result.timed_out or not result.stdout.strip():
        raise ToolError(result.error_text())
    entries = parsers.parse_du(result.stdout)
    total = next((size for size, p in entries if p.rstrip("/") == path.rstrip("/") or p == path), None)
    children = sorted(((s, p) for s, p in entries if p != path), reverse=True)
    return {
        "device": name,
        "path": path,
        "total_bytes": total,
        "total": parsers.human_bytes(total) if total is not None else None,
        "entries": [
            {
                "path": p,
                "size_bytes": s,
                "size": parsers.human_bytes(s),
                "percent": round(100 * s / total, 1) if total else None,
            }
            for s, p in children[:limit]
        ],
        "warnings": _stderr_warnings(result),
        "truncated": result.truncated,
        **({"excluded": excluded} if excluded else {}),
    }


@tool(
    "host_find_large_files",
    "The largest regular files under a directory (one filesystem; never enters /proc, /sys or /dev).",
    _schema(
        {
            "path": {"type": "string", "description": "Absolute directory path.", "default": "/"},
            "min_size_mb": {"type": "number", "minimum": 0, "default": 100},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
        },
        [],
    ),
    timeout=TOOL_TIMEOUT,
)
async def host_find_large_files(
    ctx: ToolContext, device: str, path: str = "/", min_size_mb: float = 100, limit: int = 10
) -> dict:
    path = _absolute_path(path)
    if any(path == root or path.startswith(root + "/") for root in FORBIDDEN_ROOTS):
        raise ToolError(f"{path} is a virtual filesystem; pick a real directory")
    min_kib = int(_bounded(min_size_mb, "min_size_mb", 0, 10**7, 100) * 1024)
    limit = int(_bounded(limit, "limit", 1, 50, 10))
    target, transport = await device_and_transport(ctx, device)
    path, excluded = _local_path(target, path)
    prune: list[str] = ["("]
    for index, root in enumerate([*FORBIDDEN_ROOTS, "/run", *excluded]):
        prune += (["-o"] if index else []) + ["-path", _glob_literal(root)]
    script = Script.command(
        "find",
        path,
        "-xdev",
        *prune,
        ")",
        "-prune",
        "-o",
        "-type",
        "f",
        "-size",
        f"+{min_kib}k",
        "-printf",
        parsers.FIND_FORMAT,
    )
    result = await run_with(target, transport, script)
    name = target.name
    if result.timed_out or (not result.ok and not result.stdout):
        raise ToolError(result.error_text())
    files = sorted(parsers.parse_find(result.stdout), key=lambda f: f["size_bytes"], reverse=True)
    return {
        "device": name,
        "path": path,
        "min_size_mb": min_size_mb,
        "matches": len(files),
        "files": files[:limit],
        "warnings": _stderr_warnings(result),
        "truncated": result.truncated,
        **({"excluded": excluded} if excluded else {}),
    }


@tool(
    "host_stat_file",
    "Type, size, permissions, owner and timestamps of one file or directory on a host.",
    _schema(
        {
            "path": {"type": "string", "description": "Absolute path."},
            "follow_symlinks": {"type": "boolean", "default": False},
        },
        ["path"],
    ),
    timeout=TOOL_TIMEOUT,
)
async def host_stat_file(ctx: ToolContext, device: str, path: str, follow_symlinks: bool = False) -> dict:
    path = _absolute_path(path)
    target, transport = await device_and_transport(ctx, device)
    _local_path(target, path)  # on the Ongrid host: refused if it (or what it links to) is protected
    argv = ["stat", *(["-L"] if follow_symlinks else []), f"--printf={parsers.STAT_FORMAT}", "--", path]
    result = await run_with(target, transport, Script.command(*argv))
    name = target.name
    _require_ok(result)
    return {"device": name, **parsers.parse_stat(result.stdout)}


@tool(
    "host_probe_http",
    "From a host, fetch a URL and report the HTTP status, timings (DNS, connect, TLS, first byte) and "
    "the TLS certificate's expiry.",
    _schema(
        {
            "url": {"type": "string", "description": "http:// or https:// URL."},
            "timeout_seconds": {"type": "number", "minimum": 1, "maximum": 30, "default": 10},
            "follow_redirects": {"type": "boolean", "default": False},
        },
        ["url"],
    ),
    timeout=TOOL_TIMEOUT,
)
async def host_probe_http(
    ctx: ToolContext, device: str, url: str, timeout_seconds: float = 10, follow_redirects: bool = False
) -> dict:
    if not isinstance(url, str) or not re.match(r"^https?://[^\s]+$", url):
        raise ToolError("url must start with http:// or https:// and contain no spaces")
    seconds = _bounded(timeout_seconds, "timeout_seconds", 1, 30, 10)
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


@tool(
    "host_probe_dns",
    "Resolve a name as the host sees it (its resolver configuration). A/AAAA/ANY use the system "
    "resolver; MX, TXT, CNAME, NS, SOA, SRV need dig on the host.",
    _schema(
        {
            "name": {"type": "string", "description": "Host name to resolve."},
            "record_type": {
                "type": "string",
                "enum": ["ANY", "A", "AAAA", "MX", "TXT", "CNAME", "NS", "SOA", "SRV"],
                "default": "ANY",
            },
        },
        ["name"],
    ),
    timeout=TOOL_TIMEOUT,
)
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
        _require_ok(result)
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
    _require_ok(result)
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


@tool(
    "host_probe_tcp",
    "From a host, open a TCP connection to host:port and report whether it connects and how fast.",
    _schema(
        {
            "host": {"type": "string", "description": "Target host name or IP."},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "timeout_seconds": {"type": "number", "minimum": 1, "maximum": 30, "default": 5},
        },
        ["host", "port"],
    ),
    timeout=TOOL_TIMEOUT,
)
async def host_probe_tcp(
    ctx: ToolContext, device: str, host: str, port: int, timeout_seconds: float = 5
) -> dict:
    if not isinstance(host, str) or not HOSTNAME.match(host):
        raise ToolError("host must be a host name or an IP address")
    port = int(_bounded(port, "port", 1, 65535, 0))
    seconds = _bounded(timeout_seconds, "timeout_seconds", 1, 30, 5)
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


@tool(
    "host_bash",
    "Run one read-only inspection command line on a host (e.g. `journalctl -u nginx -n 50`, "
    "`df -h`, `ss -tlnp`, `grep -c ERROR /var/log/app.log | sort`). Only allowlisted programs and "
    "options; pipes and ;/&&/|| between them; no redirections, substitutions or variables.",
    _schema({"command": {"type": "string", "description": "The command line."}}, ["command"]),
    timeout=TOOL_TIMEOUT,
)
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
