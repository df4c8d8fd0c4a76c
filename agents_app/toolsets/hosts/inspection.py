"""The host toolset's inspection handlers: load, processes, disk usage, large files, one file's
metadata. Fixed argv commands; the output parsed into compact results (docs/hosts.md)."""

from __future__ import annotations

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.hosts import parsers
from agents_app.toolsets.hosts.running import (
    absolute_path,
    bounded,
    device_and_transport,
    glob_literal,
    local_path,
    require_ok,
    run_on_device,
    run_with,
    stderr_warnings,
)
from agents_app.toolsets.hosts.transport import Script

FORBIDDEN_ROOTS = ("/proc", "/sys", "/dev")


async def get_host_load(ctx: ToolContext, device: str) -> dict:
    script = Script(((("cat", "/proc/loadavg", "/proc/uptime", "/proc/meminfo"),), (("nproc",),)), (";",))
    name, result = await run_on_device(ctx, device, script)
    require_ok(result)
    try:
        return {"device": name, **parsers.parse_load(result.stdout)}
    except parsers.ParseError as exc:
        raise ToolError(f"{name}: cannot read the load ({exc})") from None


async def get_host_processes(ctx: ToolContext, device: str, sort_by: str = "cpu", limit: int = 10) -> dict:
    if sort_by not in ("cpu", "rss"):
        raise ToolError("sort_by must be 'cpu' or 'rss'")
    limit = int(bounded(limit, "limit", 1, 50, 10))
    order = "-pcpu" if sort_by == "cpu" else "-rss"
    script = Script.command("ps", "-eo", parsers.PS_COLUMNS, f"--sort={order}")
    name, result = await run_on_device(ctx, device, script)
    require_ok(result)
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


async def host_du_summary(ctx: ToolContext, device: str, path: str, depth: int = 1, limit: int = 10) -> dict:
    path = absolute_path(path)
    depth = int(bounded(depth, "depth", 1, 3, 1))
    limit = int(bounded(limit, "limit", 1, 50, 10))
    target, transport = await device_and_transport(ctx, device)
    path, excluded = local_path(target, path)
    excludes = [f"--exclude={glob_literal(root)}" for root in excluded]
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
        "warnings": stderr_warnings(result),
        "truncated": result.truncated,
        **({"excluded": excluded} if excluded else {}),
    }


async def host_find_large_files(
    ctx: ToolContext, device: str, path: str = "/", min_size_mb: float = 100, limit: int = 10
) -> dict:
    path = absolute_path(path)
    if any(path == root or path.startswith(root + "/") for root in FORBIDDEN_ROOTS):
        raise ToolError(f"{path} is a virtual filesystem; pick a real directory")
    min_kib = int(bounded(min_size_mb, "min_size_mb", 0, 10**7, 100) * 1024)
    limit = int(bounded(limit, "limit", 1, 50, 10))
    target, transport = await device_and_transport(ctx, device)
    path, excluded = local_path(target, path)
    prune: list[str] = ["("]
    for index, root in enumerate([*FORBIDDEN_ROOTS, "/run", *excluded]):
        prune += (["-o"] if index else []) + ["-path", glob_literal(root)]
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
        "warnings": stderr_warnings(result),
        "truncated": result.truncated,
        **({"excluded": excluded} if excluded else {}),
    }


async def host_stat_file(ctx: ToolContext, device: str, path: str, follow_symlinks: bool = False) -> dict:
    path = absolute_path(path)
    target, transport = await device_and_transport(ctx, device)
    local_path(target, path)  # on the Ongrid host: refused if it (or what it links to) is protected
    argv = ["stat", *(["-L"] if follow_symlinks else []), f"--printf={parsers.STAT_FORMAT}", "--", path]
    result = await run_with(target, transport, Script.command(*argv))
    name = target.name
    require_ok(result)
    return {"device": name, **parsers.parse_stat(result.stdout)}
