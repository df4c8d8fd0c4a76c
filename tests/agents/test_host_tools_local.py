"""Host tools on the local transport, against this machine's real files, processes and sockets."""

from __future__ import annotations

import asyncio
import os
import pwd
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.hosts.running import protected_folders
from agents_app.toolsets.hosts.shell_policy import PolicyRefusal, check
from agents_app.toolsets.registry import load_builtin_tools
from ops_app.models import Device
from tests.support import httpd
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections"),
]

MIB = 1024 * 1024


@pytest.fixture
def tools():
    return load_builtin_tools()


@pytest.fixture
def local_device(org) -> Device:
    return Device.objects.create(organization=org, name="web-01", transport=Device.Transport.LOCAL)


@pytest.fixture
def ctx(org) -> ToolContext:
    return ToolContext(organization_id=org.id)


def _write(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    _write(root / "big" / "a.bin", 3 * MIB)
    _write(root / "big" / "b.bin", 2 * MIB)
    _write(root / "medium" / "c.bin", MIB + 512 * 1024)
    _write(root / "small" / "d.txt", 10 * 1024)
    return root


async def test_du_summary_ranks_directories_by_real_usage(tools, ctx, local_device, tree):
    result = await tools["host_du_summary"].handler(ctx, device="web-01", path=str(tree))
    paths = [entry["path"] for entry in result["entries"]]
    assert paths == [str(tree / "big"), str(tree / "medium"), str(tree / "small")]
    sizes = {entry["path"]: entry["size_bytes"] for entry in result["entries"]}
    assert 5 * MIB <= sizes[str(tree / "big")] < 5 * MIB + 256 * 1024
    assert 1.5 * MIB <= sizes[str(tree / "medium")] < 1.5 * MIB + 256 * 1024
    assert result["total_bytes"] >= sum(sizes.values())
    assert result["entries"][0]["percent"] > 70


async def test_du_summary_accepts_a_device_id_and_limits_entries(tools, ctx, local_device, tree):
    result = await tools["host_du_summary"].handler(ctx, device=str(local_device.id), path=str(tree), limit=1)
    assert [e["path"] for e in result["entries"]] == [str(tree / "big")]


async def test_du_summary_reports_the_commands_own_error(tools, ctx, local_device, tmp_path):
    with pytest.raises(ToolError, match="No such file or directory"):
        await tools["host_du_summary"].handler(ctx, device="web-01", path=str(tmp_path / "nope"))


async def test_relative_paths_are_refused(tools, ctx, local_device):
    with pytest.raises(ToolError, match="absolute path"):
        await tools["host_du_summary"].handler(ctx, device="web-01", path="var/log")


async def test_find_large_files_lists_files_above_the_threshold_biggest_first(tools, ctx, local_device, tree):
    result = await tools["host_find_large_files"].handler(ctx, device="web-01", path=str(tree), min_size_mb=1)
    assert [(f["path"], f["size_bytes"]) for f in result["files"]] == [
        (str(tree / "big" / "a.bin"), 3 * MIB),
        (str(tree / "big" / "b.bin"), 2 * MIB),
        (str(tree / "medium" / "c.bin"), MIB + 512 * 1024),
    ]
    assert result["matches"] == 3
    assert result["files"][0]["size"] == "3.0 MiB"


async def test_find_large_files_never_enters_virtual_filesystems(tools, ctx, local_device):
    for path in ("/proc", "/sys/kernel", "/dev"):
        with pytest.raises(ToolError, match="virtual filesystem"):
            await tools["host_find_large_files"].handler(ctx, device="web-01", path=path, min_size_mb=0)


def _conf_file(directory: Path) -> Path:
    target = directory / "app.conf"
    target.write_text("listen 8080\n")
    target.chmod(0o640)
    return target


async def test_stat_file_reports_type_size_mode_and_owner(tools, ctx, local_device, tmp_path):
    target = _conf_file(tmp_path)
    result = await tools["host_stat_file"].handler(ctx, device="web-01", path=str(target))
    assert result["type"] == "regular file"
    assert result["size_bytes"] == 12
    assert result["mode"] == "0640"
    assert result["permissions"] == "-rw-r-----"
    assert result["owner"] == pwd.getpwuid(os.getuid()).pw_name
    assert result["modified"].startswith(time.strftime("%Y-", time.gmtime()))


async def test_stat_file_of_a_missing_path_carries_stats_error(tools, ctx, local_device, tmp_path):
    with pytest.raises(ToolError, match=r"exited with status 1: stat: cannot statx?.*No such file"):
        await tools["host_stat_file"].handler(ctx, device="web-01", path=str(tmp_path / "missing"))


def _kernel_numbers() -> dict:
    meminfo = Path("/proc/meminfo").read_text()
    total_kib = int(next(line for line in meminfo.splitlines() if line.startswith("MemTotal")).split()[1])
    return {"mem_total": total_kib * 1024, "uptime": int(float(Path("/proc/uptime").read_text().split()[0]))}


async def test_host_load_matches_the_kernel(tools, ctx, local_device):
    result = await tools["get_host_load"].handler(ctx, device="web-01")
    assert result["cpu_count"] == len(os.sched_getaffinity(0))
    kernel = _kernel_numbers()
    assert result["memory"]["total_bytes"] == kernel["mem_total"]
    assert 0 <= result["memory"]["used_percent"] <= 100
    assert result["uptime_seconds"] >= kernel["uptime"] - 5
    assert set(result["load"]) == {"1m", "5m", "15m"}


@pytest.fixture
def memory_hog():
    marker = f"ongrid-test-memory-{os.getpid()}"
    code = "import time; b = bytearray(120 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(120)"
    proc = subprocess.Popen([sys.executable, "-c", code, marker])
    yield proc, marker
    proc.kill()
    proc.wait()


@pytest.fixture
def cpu_burner():
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass", "ongrid-test-cpu"])
    yield proc
    proc.kill()
    proc.wait()


async def _poll_processes(tools, ctx, sort_by: str, pid: int, good) -> tuple[dict, dict]:
    """Ask the tool until `pid` shows up satisfying `good` (the process needs a moment to grow)."""
    deadline = time.monotonic() + 20
    while True:
        result = await tools["get_host_processes"].handler(ctx, device="web-01", sort_by=sort_by, limit=50)
        mine = [p for p in result["processes"] if p["pid"] == pid]
        if mine and good(mine[0]):
            return result, mine[0]
        assert time.monotonic() < deadline, f"process {pid} never showed up in the {sort_by} ranking"
        await asyncio.sleep(0.2)


async def test_processes_finds_a_process_started_by_the_test(tools, ctx, local_device, memory_hog):
    hog, marker = memory_hog
    result, mine = await _poll_processes(tools, ctx, "rss", hog.pid, lambda p: p["rss_bytes"] >= 100 * MIB)
    assert marker in mine["command"]
    rss = [p["rss_bytes"] for p in result["processes"]]
    assert rss == sorted(rss, reverse=True)
    assert result["total_processes"] >= len(result["processes"])


async def test_processes_by_cpu_finds_a_busy_process(tools, ctx, local_device, cpu_burner):
    result, mine = await _poll_processes(tools, ctx, "cpu", cpu_burner.pid, lambda p: p["cpu_percent"] > 10)
    assert "ongrid-test-cpu" in mine["command"]
    cpu = [p["cpu_percent"] for p in result["processes"]]
    assert cpu == sorted(cpu, reverse=True)


async def test_probe_http_reports_status_and_timings(tools, ctx, local_device):
    with httpd.serve() as base:
        ok = await tools["host_probe_http"].handler(ctx, device="web-01", url=base + "/health")
        missing = await tools["host_probe_http"].handler(ctx, device="web-01", url=base + "/missing")
    assert ok["status"] == 200 and ok["ok"] is True
    assert ok["size_bytes"] == len(b"hello from the test server\n")
    assert ok["timings_ms"]["total"] >= ok["timings_ms"]["connect"] >= 0
    assert "tls" not in ok
    assert missing["status"] == 404 and missing["ok"] is False


async def test_probe_http_reports_certificate_expiry(tools, ctx, local_device, tmp_path):
    with httpd.serve(tls_dir=tmp_path, days=12) as base:
        result = await tools["host_probe_http"].handler(ctx, device="web-01", url=base + "/")
    assert result["status"] == 200
    assert 11.5 < result["tls"]["days_left"] <= 12
    assert "ongrid-test.local" in result["tls"]["subject"]
    assert result["tls"]["verified"] is False  # self-signed


async def test_probe_http_unreachable_reports_curls_error(tools, ctx, local_device):
    port = _closed_port()
    result = await tools["host_probe_http"].handler(ctx, device="web-01", url=f"http://127.0.0.1:{port}/")
    assert result["ok"] is False and result["status"] == 0
    assert "Failed to connect" in result["error"] or "Couldn't connect" in result["error"]


async def test_probe_http_rejects_other_schemes(tools, ctx, local_device):
    with pytest.raises(ToolError, match="http:// or https://"):
        await tools["host_probe_http"].handler(ctx, device="web-01", url="file:///etc/passwd")


async def test_probe_dns_resolves_with_the_hosts_resolver(tools, ctx, local_device):
    found = await tools["host_probe_dns"].handler(ctx, device="web-01", name="localhost", record_type="A")
    assert found["found"] is True and "127.0.0.1" in found["addresses"]
    missing = await tools["host_probe_dns"].handler(ctx, device="web-01", name="no-such-host.invalid")
    assert missing["found"] is False and missing["addresses"] == []
    with pytest.raises(ToolError, match="host name"):
        await tools["host_probe_dns"].handler(ctx, device="web-01", name="-rf; x")


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


async def test_probe_tcp_open_and_refused(tools, ctx, local_device):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        port = listener.getsockname()[1]
        result = await tools["host_probe_tcp"].handler(ctx, device="web-01", host="127.0.0.1", port=port)
        assert result["open"] is True and result["connect_ms"] >= 0
    finally:
        listener.close()
    refused = await tools["host_probe_tcp"].handler(
        ctx, device="web-01", host="127.0.0.1", port=_closed_port()
    )
    assert refused["open"] is False and "refused" in refused["error"].lower()


async def test_host_bash_runs_an_allowed_pipeline(tools, ctx, local_device, tree):
    command = f"find {tree} -type f -name '*.bin' | sort | wc -l"
    result = await tools["host_bash"].handler(ctx, device="web-01", command=command)
    assert result["exit_status"] == 0
    assert result["stdout"].strip() == "3"
    assert "truncated" not in result


async def test_host_bash_chains_follow_shell_rules(tools, ctx, local_device, tree):
    result = await tools["host_bash"].handler(
        ctx, device="web-01", command=f"ls {tree}/nope || echo fallback && ls {tree}"
    )
    assert result["stdout"].split() == ["fallback", "big", "medium", "small"]
    assert "No such file or directory" in result["stderr"]


def _write_log(directory: Path) -> Path:
    big = directory / "big.log"
    big.write_text("line of log output\n" * 10000)  # 190000 bytes
    return big


async def test_host_bash_truncates_and_reports_the_original_size(tools, ctx, local_device, tmp_path):
    big = _write_log(tmp_path)
    result = await tools["host_bash"].handler(ctx, device="web-01", command=f"cat {big}")
    assert len(result["stdout"].encode()) == 16 * 1024
    assert "190000" in result["truncated"]


def _victim(directory: Path) -> Path:
    victim = directory / "keep.txt"
    victim.write_text("precious")
    return victim


def _read(path: Path) -> str:
    return path.read_text()


async def test_host_bash_refuses_and_nothing_runs(tools, ctx, local_device, tmp_path):
    victim = _victim(tmp_path)
    for command in (
        f"rm {victim}",
        f"cat {victim} > {victim}",
        f"ls; rm {victim}",
        f"find {tmp_path} -delete",
    ):
        with pytest.raises(ToolError, match="refused"):
            await tools["host_bash"].handler(ctx, device="web-01", command=command)
    assert _read(victim) == "precious"


async def test_host_bash_does_not_leak_ongrids_environment(tools, ctx, local_device, monkeypatch):
    monkeypatch.setenv("ONGRID_TEST_SECRET", "s3cr3t-value")
    with pytest.raises(ToolError, match="environments hold secrets"):
        await tools["host_bash"].handler(ctx, device="web-01", command="cat /proc/self/environ")
    with pytest.raises(ToolError, match="/proc is off limits on the Ongrid host"):
        await tools["host_bash"].handler(ctx, device="web-01", command="cat /proc/self/status")


async def test_local_children_get_a_minimal_environment(monkeypatch):
    from agents_app.toolsets.hosts.local import CHILD_ENV, LocalTransport
    from agents_app.toolsets.hosts.transport import Script

    monkeypatch.setenv("ONGRID_TEST_SECRET", "s3cr3t-value")
    result = await LocalTransport().run(Script.command("cat", "/proc/self/environ"))
    assert result.ok
    variables = dict(item.split("=", 1) for item in result.stdout.split("\0") if item)
    assert variables and set(variables) <= set(CHILD_ENV)
    assert "s3cr3t-value" not in result.stdout and "SECRET_KEY" not in variables


@pytest.fixture
def their_device(other_org) -> Device:
    return Device.objects.create(organization=other_org, name="their-db", transport=Device.Transport.LOCAL)


async def test_device_of_another_tenant_is_not_found(tools, other_org, local_device, their_device):
    mine = ToolContext(organization_id=local_device.organization_id)
    with pytest.raises(ToolError, match="'their-db' not found"):
        await tools["get_host_load"].handler(mine, device="their-db")
    theirs = ToolContext(organization_id=other_org.id)
    with pytest.raises(ToolError, match="not found"):
        await tools["get_host_load"].handler(theirs, device=str(local_device.id))


async def test_every_host_tool_is_read_class(tools):
    names = [
        "get_host_load",
        "get_host_processes",
        "host_du_summary",
        "host_find_large_files",
        "host_stat_file",
        "host_probe_http",
        "host_probe_dns",
        "host_probe_tcp",
        "host_bash",
    ]
    for name in names:
        assert tools[name].tool_class == "read"
        assert "device" in tools[name].parameters["required"]


async def test_host_bash_on_the_local_device_cannot_read_ongrids_data_folder(tools, ctx, local_device):
    from django.conf import settings

    database = f"{settings.CONFIG.data_dir}/ongrid.sqlite3"
    with pytest.raises(ToolError, match="data folder"):
        await tools["host_bash"].handler(ctx, device="web-01", command=f"cat {database}")


async def test_local_timeout_kills_every_stage_of_the_pipeline():
    from agents_app.toolsets.hosts.local import LocalTransport
    from agents_app.toolsets.hosts.transport import Script

    marker = f"{os.getpid()}.{time.monotonic_ns() % 10**6}"
    script = Script(((("sleep", f"30.{marker.replace('.', '')}"), ("cat",)),))
    result = await LocalTransport().run(script, time_limit=0.3)
    assert result.timed_out and result.exit_status is None
    assert "timed out" in result.error_text()
    assert not _processes_with(f"sleep 30.{marker.replace('.', '')}")


def _processes_with(text: str) -> list[str]:
    found = []
    for status in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            command = status.read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        if command == text:
            found.append(command)
    return found


# --- the Ongrid host is not a device like the others: its own folders are off limits ----------------

SQLITE_MAGIC = b"SQLite format 3\x00"


@pytest.fixture
def ongrid_data(tmp_path: Path, settings) -> Path:
    """A temporary Ongrid data folder with a database file, next to an unprotected twin."""
    import dataclasses

    data = tmp_path / "srv" / "ongrid-data"
    data.mkdir(parents=True)
    (data / "ongrid.sqlite3").write_bytes(SQLITE_MAGIC + os.urandom(2 * MIB))
    (tmp_path / "srv" / "public").mkdir()
    (tmp_path / "srv" / "public" / "copy.sqlite3").write_bytes(SQLITE_MAGIC + b"not protected")
    (tmp_path / "file-link").symlink_to(data / "ongrid.sqlite3")
    (tmp_path / "dir-link").symlink_to(data)
    settings.CONFIG = dataclasses.replace(settings.CONFIG, data_dir=data)
    return data


def _reads_of_the_database(data: Path, tmp_path: Path) -> list[str]:
    database = data / "ongrid.sqlite3"
    return [
        f"cat {database}",
        f"cat /{database}",  # //path
        f"head -c 16 //{str(database).lstrip('/')}",
        f"cat /proc/self/root{database}",
        f"cat /proc/{os.getpid()}/root{database}",
        f"cat {data}/../{data.name}/ongrid.sqlite3",
        f"cat {tmp_path}/srv/./public/../ongrid-data/ongrid.sqlite3",
        f"cat {tmp_path}/file-link",
        f"cat {tmp_path}/dir-link/ongrid.sqlite3",
        f"grep -c SQLite {tmp_path}/dir-link/ongrid.sqlite3",
        f"grep -r SQLite {tmp_path}/srv",
        f"grep -r SQLite {tmp_path}/dir-link",
        f"find {tmp_path}/srv -name '*.sqlite3'",
        f"du -a {tmp_path}",
        f"ls -R {tmp_path}/srv",
        f"find -L {tmp_path}/srv/public",
        f"md5sum {database}",
        f"file {database}",
        f"stat -c %s {tmp_path}/file-link",
        f"grep --file={database} x /etc/hostname",
    ]


async def test_host_bash_cannot_read_the_ongrid_database_by_any_path(
    tools, ctx, local_device, ongrid_data, tmp_path
):
    control = await tools["host_bash"].handler(
        ctx, device="web-01", command=f"head -c 15 {tmp_path}/srv/public/copy.sqlite3"
    )
    assert control["stdout"] == "SQLite format 3"  # the same read outside the data folder works
    protected = protected_folders(local_device)
    for command in _reads_of_the_database(ongrid_data, tmp_path):
        if "/proc/" not in command:  # the Ongrid-host rule alone refuses it, not the secret deny list
            with pytest.raises(PolicyRefusal, match="off limits on the Ongrid host|symbolic links"):
                check(command, protected=protected)
        with pytest.raises(ToolError, match="refused") as refusal:
            await tools["host_bash"].handler(ctx, device="web-01", command=command)
        assert "SQLite format 3" not in str(refusal.value), command


async def test_host_bash_cannot_read_the_servers_environment(tools, ctx, local_device):
    pid = os.getpid()
    for command in (
        f"cat /proc/{pid}/environ",
        f"cat //proc/{pid}/environ",
        f"cat /proc/{pid}/task/{pid}/environ",
        f"cat /proc/self/root/proc/{pid}/environ",
        f"grep -r SECRET_KEY //proc/{pid}",
        f"grep -ra SECRET_KEY /proc/{pid}/",
        f"head -c 100 /proc/{pid}/cmdline",
        "cat /dev/fd/0",
        "grep -r SECRET_KEY /",
    ):
        with pytest.raises(ToolError, match="refused") as refusal:
            await tools["host_bash"].handler(ctx, device="web-01", command=command)
        assert "ongrid-test-only-secret-key" not in str(refusal.value)


async def test_host_bash_cannot_read_ongrids_code_or_virtualenv(tools, ctx, local_device):
    from django.conf import settings

    for command in (
        f"cat {settings.BASE_DIR}/ongrid_site/settings.py",
        f"grep -r import {settings.BASE_DIR}",
        f"ls {sys.prefix}/bin",
        f"find {Path(settings.BASE_DIR).parent} -name '*.py'",
    ):
        with pytest.raises(ToolError, match="off limits on the Ongrid host"):
            await tools["host_bash"].handler(ctx, device="web-01", command=command)


async def test_file_tools_refuse_the_data_folder_on_the_local_device(
    tools, ctx, local_device, ongrid_data, tmp_path
):
    for path in (
        str(ongrid_data / "ongrid.sqlite3"),
        f"/{ongrid_data}/ongrid.sqlite3",
        f"/proc/self/root{ongrid_data}",
        f"{tmp_path}/srv/public/../ongrid-data",
        f"{tmp_path}/file-link",
        f"{tmp_path}/dir-link",
    ):
        with pytest.raises(ToolError, match="off limits on the Ongrid host"):
            await tools["host_stat_file"].handler(ctx, device="web-01", path=path)
        with pytest.raises(ToolError, match="off limits on the Ongrid host"):
            await tools["host_du_summary"].handler(ctx, device="web-01", path=path)
        with pytest.raises(ToolError, match="off limits on the Ongrid host|virtual filesystem"):
            await tools["host_find_large_files"].handler(ctx, device="web-01", path=path, min_size_mb=0)
    with pytest.raises(ToolError, match="off limits on the Ongrid host"):
        await tools["host_stat_file"].handler(ctx, device="web-01", path=f"/proc/{os.getpid()}/environ")


async def test_walks_above_the_data_folder_leave_it_out(tools, ctx, local_device, ongrid_data, tmp_path):
    srv = tmp_path / "srv"
    found = await tools["host_find_large_files"].handler(ctx, device="web-01", path=str(srv), min_size_mb=0)
    assert [f["path"] for f in found["files"]] == [str(srv / "public" / "copy.sqlite3")]
    assert str(ongrid_data) in found["excluded"]
    usage = await tools["host_du_summary"].handler(ctx, device="web-01", path=str(srv), depth=2)
    assert {e["path"] for e in usage["entries"]} == {
        str(srv / "public"),
        str(srv / "public" / "copy.sqlite3"),
    }
    assert usage["total_bytes"] < MIB  # the 2 MiB database is not counted


async def test_the_same_paths_are_fine_on_a_device_that_is_not_the_ongrid_host(ongrid_data, tmp_path):
    script = check(f"cat {ongrid_data}/ongrid.sqlite3 {tmp_path}/file-link")
    assert script.pipelines[0][0][0] == "cat"
