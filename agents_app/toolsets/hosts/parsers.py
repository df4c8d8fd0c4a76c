"""Turn the raw output of standard Linux commands into compact structured results.

Each parser takes the text a real command printed (run with LC_ALL=C) and returns plain dicts
and lists, small enough for an LLM context. They raise `ParseError` when the text is not what
the command prints, so a tool can report that instead of inventing numbers.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime


class ParseError(ValueError):
    pass


def human_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024 or unit == "TiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover - loop always returns


def human_duration(seconds: float) -> str:
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    return f"{days}d {hours}h {minutes}m" if days else f"{hours}h {minutes}m"


def _percent(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 1) if whole else 0.0


def parse_load(text: str) -> dict:
    """Output of `cat /proc/loadavg /proc/uptime /proc/meminfo; nproc`."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 4:
        raise ParseError("expected /proc/loadavg, /proc/uptime, /proc/meminfo and nproc output")
    load = lines[0].split()
    uptime = lines[1].split()
    if len(load) < 4 or "/" not in load[3] or len(uptime) < 1 or not lines[-1].strip().isdigit():
        raise ParseError("unexpected /proc/loadavg, /proc/uptime or nproc output")
    meminfo: dict[str, int] = {}
    for line in lines[2:-1]:
        match = re.match(r"^(\w+(?:\(\w+\))?):\s+(\d+)(?:\s+kB)?$", line.strip())
        if match:
            meminfo[match.group(1)] = int(match.group(2)) * 1024
    if "MemTotal" not in meminfo:
        raise ParseError("no MemTotal in /proc/meminfo")
    cpus = int(lines[-1].strip())
    one, five, fifteen = (float(v) for v in load[:3])
    running, total = (int(v) for v in load[3].split("/"))
    mem_total = meminfo["MemTotal"]
    mem_available = meminfo.get("MemAvailable", meminfo.get("MemFree", 0))
    swap_total = meminfo.get("SwapTotal", 0)
    swap_free = meminfo.get("SwapFree", 0)
    seconds = float(uptime[0])
    return {
        "load": {"1m": one, "5m": five, "15m": fifteen},
        "cpu_count": cpus,
        "load_per_cpu_1m": round(one / cpus, 2) if cpus else None,
        "processes": {"running": running, "total": total},
        "memory": {
            "total_bytes": mem_total,
            "available_bytes": mem_available,
            "used_percent": _percent(mem_total - mem_available, mem_total),
            "total": human_bytes(mem_total),
            "available": human_bytes(mem_available),
        },
        "swap": {
            "total_bytes": swap_total,
            "used_bytes": swap_total - swap_free,
            "used_percent": _percent(swap_total - swap_free, swap_total),
        },
        "uptime_seconds": int(seconds),
        "uptime": human_duration(seconds),
    }


PS_COLUMNS = "pid=,ppid=,user:32=,pcpu=,pmem=,rss=,etimes=,args="


def parse_processes(text: str) -> list[dict]:
    """Output of `ps -eo pid=,ppid=,user:32=,pcpu=,pmem=,rss=,etimes=,args=`."""
    processes = []
    for line in text.splitlines():
        parts = line.split(None, 7)
        if len(parts) < 7:
            continue
        try:
            pid, ppid, user, cpu, mem, rss, elapsed = parts[:7]
            command = parts[7] if len(parts) > 7 else ""
            processes.append(
                {
                    "pid": int(pid),
                    "ppid": int(ppid),
                    "user": user,
                    "cpu_percent": float(cpu),
                    "mem_percent": float(mem),
                    "rss_bytes": int(rss) * 1024,
                    "elapsed_seconds": int(elapsed),
                    "command": command[:300],
                }
            )
        except ValueError:
            continue
    if not processes:
        raise ParseError("ps printed no process lines")
    return processes


def parse_du(text: str) -> list[tuple[int, str]]:
    """Output of `du -B1 ...`: `<bytes>\\t<path>` per line."""
    entries = []
    for line in text.splitlines():
        size, sep, path = line.partition("\t")
        if sep and size.isdigit():
            entries.append((int(size), path))
    if not entries:
        raise ParseError("du printed no sizes")
    return entries


FIND_FORMAT = "%s %T@ %p\\0"


def parse_find(text: str) -> list[dict]:
    """Output of `find ... -printf '%s %T@ %p\\0'` (NUL-separated, so any file name is safe)."""
    files = []
    for record in text.split("\0"):
        parts = record.split(" ", 2)
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        size, mtime, path = parts
        files.append(
            {
                "path": path,
                "size_bytes": int(size),
                "size": human_bytes(int(size)),
                "modified": _iso(float(mtime)),
            }
        )
    return files


STAT_FIELDS = (
    "path",
    "type",
    "size_bytes",
    "mode",
    "permissions",
    "owner",
    "group",
    "modified_epoch",
    "accessed_epoch",
    "changed_epoch",
    "links",
    "inode",
    "mount_point",
)
STAT_FORMAT = (
    "\\0".join(("%n", "%F", "%s", "%a", "%A", "%U", "%G", "%Y", "%X", "%Z", "%h", "%i", "%m")) + "\\0"
)


def parse_stat(text: str) -> dict:
    """Output of `stat --printf` with STAT_FORMAT."""
    values = text.split("\0")
    if len(values) < len(STAT_FIELDS):
        raise ParseError("stat printed fewer fields than requested")
    raw = dict(zip(STAT_FIELDS, values, strict=False))
    result: dict = {
        "path": raw["path"],
        "type": raw["type"],
        "size_bytes": int(raw["size_bytes"]),
        "size": human_bytes(int(raw["size_bytes"])),
        "mode": raw["mode"].zfill(4),
        "permissions": raw["permissions"],
        "owner": raw["owner"],
        "group": raw["group"],
        "links": int(raw["links"]),
        "inode": int(raw["inode"]),
        "mount_point": raw["mount_point"],
    }
    for key in ("modified", "accessed", "changed"):
        result[key] = _iso(float(raw[f"{key}_epoch"]))
    return result


CURL_MARK = "---certs---"
CURL_WRITE_OUT = (
    "http_code=%{http_code}\\nhttp_version=%{http_version}\\nremote_ip=%{remote_ip}\\n"
    "time_namelookup=%{time_namelookup}\\ntime_connect=%{time_connect}\\ntime_appconnect=%{time_appconnect}\\n"
    "time_starttransfer=%{time_starttransfer}\\ntime_total=%{time_total}\\nsize_download=%{size_download}\\n"
    "redirect_url=%{redirect_url}\\nnum_redirects=%{num_redirects}\\nssl_verify_result=%{ssl_verify_result}\\n"
    + CURL_MARK
    + "\\n%{certs}"
)


def parse_curl(text: str, now: datetime | None = None) -> dict:
    """curl's `-w CURL_WRITE_OUT` report: status, timings (ms) and the leaf certificate's expiry."""
    head, _, certs = text.partition(CURL_MARK)
    fields = dict(line.split("=", 1) for line in head.splitlines() if "=" in line)
    if "http_code" not in fields:
        raise ParseError("curl printed no report")

    def ms(name: str) -> float:
        return round(float(fields.get(name) or 0) * 1000, 1)

    result: dict = {
        "status": int(fields["http_code"] or 0),
        "http_version": fields.get("http_version") or None,
        "remote_ip": fields.get("remote_ip") or None,
        "timings_ms": {
            "dns": ms("time_namelookup"),
            "connect": ms("time_connect"),
            "tls": ms("time_appconnect"),
            "first_byte": ms("time_starttransfer"),
            "total": ms("time_total"),
        },
        "size_bytes": int(float(fields.get("size_download") or 0)),
        "redirects": int(fields.get("num_redirects") or 0),
        "redirect_url": fields.get("redirect_url") or None,
    }
    certificate = _leaf_certificate(certs, now or datetime.now(UTC))
    if certificate:
        certificate["verified"] = fields.get("ssl_verify_result") == "0"
        result["tls"] = certificate
    return result


def _leaf_certificate(certs: str, now: datetime) -> dict | None:
    """The first certificate of curl's %{certs} dump (the server's own)."""
    subject = re.search(r"^Subject:\s*(.+)$", certs, re.MULTILINE)
    expire = re.search(r"^Expire date:\s*(.+)$", certs, re.MULTILINE)
    if not expire:
        return None
    issuer = re.search(r"^Issuer:\s*(.+)$", certs, re.MULTILINE)
    not_after = datetime.strptime(expire.group(1).strip(), "%b %d %H:%M:%S %Y %Z").replace(tzinfo=UTC)
    return {
        "subject": subject.group(1).strip() if subject else None,
        "issuer": issuer.group(1).strip() if issuer else None,
        "not_after": not_after.isoformat(),
        "days_left": round((not_after - now).total_seconds() / 86400, 1),
    }


def parse_getent_hosts(text: str) -> dict:
    """`getent ahosts NAME`: `<address> <socktype> [canonical name]` lines."""
    addresses: list[str] = []
    canonical = None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            if parts[0] not in addresses:
                addresses.append(parts[0])
            if len(parts) >= 3 and canonical is None:
                canonical = parts[2]
    return {"addresses": addresses, "canonical_name": canonical}


def parse_dig_answer(text: str) -> list[dict]:
    """`dig +noall +answer`: `name ttl class type value` lines."""
    records = []
    for line in text.splitlines():
        parts = line.split(None, 4)
        if len(parts) == 5 and parts[1].isdigit():
            records.append({"name": parts[0], "ttl": int(parts[1]), "type": parts[3], "value": parts[4]})
    return records


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")
