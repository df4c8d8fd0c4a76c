from agents_app.toolsets.manifest import REASON, Toolset, ToolSpec

TOOL_TIMEOUT = 35.0
DEVICE = {"type": "string", "description": "Device name or id (from query_devices)."}


def _schema(properties: dict, required: list[str]) -> dict:
    return {
        "type": "object",
        "properties": {"device": DEVICE, **properties},
        "required": ["device", *required],
        "additionalProperties": False,
    }


GET_HOST_LOAD = ToolSpec(
    "get_host_load",
    "Load averages (1/5/15 min), CPU count, memory and swap use, process counts and uptime of a host.",
    _schema({}, []),
    timeout=TOOL_TIMEOUT,
    on_host=True,
    owner="specialist-compute",
    redirect_reason="host load, CPU and memory are read on the host",
)

GET_HOST_PROCESSES = ToolSpec(
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
    on_host=True,
    owner="specialist-compute",
    redirect_reason="process listings are read on the host",
)

HOST_DU_SUMMARY = ToolSpec(
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
    on_host=True,
    owner="specialist-disk",
    redirect_reason="directory usage analysis runs on the host",
)

HOST_FIND_LARGE_FILES = ToolSpec(
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
    on_host=True,
    owner="specialist-disk",
    redirect_reason="large-file hunts run on the host",
)

HOST_STAT_FILE = ToolSpec(
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
    on_host=True,
    owner="specialist-disk",
    redirect_reason="file metadata is read on the host",
)

HOST_PROBE_HTTP = ToolSpec(
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
    on_host=True,
    owner="specialist-network",
    redirect_reason="HTTP probes run from a host",
)

HOST_PROBE_DNS = ToolSpec(
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
    on_host=True,
    owner="specialist-network",
    redirect_reason="DNS probes run from a host",
)

HOST_PROBE_TCP = ToolSpec(
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
    on_host=True,
    owner="specialist-network",
    redirect_reason="TCP probes run from a host",
)

HOST_BASH = ToolSpec(
    "host_bash",
    "Run one read-only inspection command line on a host (e.g. `journalctl -u nginx -n 50`, "
    "`df -h`, `ss -tlnp`, `grep -c ERROR /var/log/app.log | sort`). Only allowlisted programs and "
    "options; pipes and ;/&&/|| between them; no redirections, substitutions or variables.",
    _schema({"command": {"type": "string", "description": "The command line."}}, ["command"]),
    timeout=TOOL_TIMEOUT,
    on_host=True,
    owner="specialist-ops",
    redirect_reason="shell inspection runs on the host under a read-only policy",
    also_redirects=("run_command",),
)

HOST_RESTART_SERVICE = ToolSpec(
    "host_restart_service",
    "Restart one systemd service on one device (`systemctl restart <service>`). Only services in "
    "the configured allowlist. Reviewed before it runs; returns the command's outcome.",
    {
        "type": "object",
        "properties": {
            "device": DEVICE,
            "service": {"type": "string", "description": "The systemd unit, e.g. nginx."},
            "reason": REASON,
        },
        "required": ["device", "service", "reason"],
        "additionalProperties": False,
    },
    tool_class="write",
    timeout=60.0,
    on_host=True,
    owner="specialist-ops",
    redirect_reason="service restarts are changes that pass the review gate",
    also_redirects=("restart_service",),
)

TOOLSET = Toolset(
    "hosts",
    "Read-only inspection of one device over SSH (or the Ongrid host), and service restarts",
    (
        GET_HOST_LOAD,
        GET_HOST_PROCESSES,
        HOST_DU_SUMMARY,
        HOST_FIND_LARGE_FILES,
        HOST_STAT_FILE,
        HOST_PROBE_HTTP,
        HOST_PROBE_DNS,
        HOST_PROBE_TCP,
        HOST_BASH,
        HOST_RESTART_SERVICE,
    ),
    handlers=("inspection", "probes", "shell", "services"),
)
