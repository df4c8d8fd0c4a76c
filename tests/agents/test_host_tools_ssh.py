"""Host tools over the SSH transport, against a real OpenSSH server on loopback."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.hosts import ssh as ssh_transport
from agents_app.toolsets.hosts.devices import transport_for
from agents_app.toolsets.hosts.transport import Script
from agents_app.toolsets.registry import load_builtin_tools
from ops_app.models import Device
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.sshd import SSHServer, sshd  # noqa: F401 - the fixture

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("close_async_db_connections"),
]

MIB = 1024 * 1024
OTHER_HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"


@pytest.fixture
def tools():
    return load_builtin_tools()


@pytest.fixture
def ctx(org) -> ToolContext:
    return ToolContext(organization_id=org.id)


@pytest.fixture
async def fresh_pool():
    """Each test starts without pooled connections and leaves none behind."""
    await ssh_transport.close_all()
    yield
    await ssh_transport.close_all()


def make_device(org, server: SSHServer, name: str = "db-01", **overrides) -> Device:
    fields = {
        "organization": org,
        "name": name,
        "address": server.host,
        "transport": Device.Transport.SSH,
        "ssh_port": server.port,
        "ssh_username": server.username,
        "ssh_private_key": server.private_key,
        "ssh_known_hosts": server.known_hosts,
        "ssh_host_key_policy": Device.KnownHosts.STRICT,
    }
    fields.update(overrides)
    return Device.objects.create(**fields)


@pytest.fixture
def device(org, sshd) -> Device:  # noqa: F811
    return make_device(org, sshd)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "srv"
    for relative, size in (("logs/a.log", 2 * MIB), ("logs/b.log", MIB + 4096), ("cache/c.bin", 300 * 1024)):
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(os.urandom(size))
    (root / "big.txt").write_text("error line\n" * 20000)  # 220000 bytes
    return root


def accepted_logins(server: SSHServer) -> int:
    return server.log().count("Accepted publickey")


async def test_tools_run_over_ssh_and_reuse_one_connection(tools, ctx, device, sshd, tree, fresh_pool):  # noqa: F811
    before = accepted_logins(sshd)
    load = await tools["get_host_load"].handler(ctx, device="db-01")
    assert load["device"] == "db-01" and load["cpu_count"] >= 1 and load["memory"]["total_bytes"] > 0
    du = await tools["host_du_summary"].handler(ctx, device="db-01", path=str(tree))
    assert [e["path"] for e in du["entries"]] == [str(tree / n) for n in ("logs", "cache", "big.txt")]
    found = await tools["host_find_large_files"].handler(ctx, device="db-01", path=str(tree), min_size_mb=1)
    assert [(f["path"], f["size_bytes"]) for f in found["files"]] == [
        (str(tree / "logs" / "a.log"), 2 * MIB),
        (str(tree / "logs" / "b.log"), MIB + 4096),
    ]
    stat = await tools["host_stat_file"].handler(
        ctx, device=str(device.id), path=str(tree / "cache" / "c.bin")
    )
    assert stat["size_bytes"] == 300 * 1024 and stat["type"] == "regular file"
    assert accepted_logins(sshd) - before == 1  # four tools, one SSH handshake


async def test_host_bash_over_ssh_quotes_every_word(tools, ctx, device, tree, fresh_pool):
    result = await tools["host_bash"].handler(
        ctx, device="db-01", command=f"grep -c 'error line' {tree}/big.txt && echo 'a;b|c && d' '*' '~'"
    )
    # The remote shell saw quoted words: no second command, no glob or tilde expansion.
    assert result["stdout"].splitlines() == ["20000", "a;b|c && d * ~"]


async def test_host_bash_over_ssh_pipeline_and_truncation(tools, ctx, device, tree, fresh_pool):
    piped = await tools["host_bash"].handler(
        ctx, device="db-01", command=f"ls {tree}/logs | sort -r | head -n 1"
    )
    assert piped["stdout"] == "b.log\n" and piped["exit_status"] == 0
    big = await tools["host_bash"].handler(ctx, device="db-01", command=f"cat {tree}/big.txt")
    assert len(big["stdout"].encode()) == 16 * 1024
    assert "220000" in big["truncated"]


async def test_remote_command_error_is_reported(tools, ctx, device, tmp_path, fresh_pool):
    with pytest.raises(ToolError, match="No such file or directory"):
        await tools["host_stat_file"].handler(ctx, device="db-01", path=str(tmp_path / "absent"))
    failed = await tools["host_bash"].handler(ctx, device="db-01", command=f"ls {tmp_path}/absent")
    assert failed["exit_status"] == 2 and "No such file or directory" in failed["stderr"]


async def test_ssh_command_timeout_keeps_the_connection_usable(device, fresh_pool):
    transport = transport_for(device)
    slow = await transport.run(Script.command("sleep", "10"), time_limit=0.5)
    assert slow.timed_out and slow.exit_status is None
    assert "timed out" in slow.error_text()
    quick = await transport.run(Script.command("echo", "still here"))
    assert quick.ok and quick.stdout == "still here\n"


@pytest.fixture
def strict_without_keys(org, sshd) -> Device:  # noqa: F811
    return make_device(org, sshd, name="no-keys", ssh_known_hosts="")


async def test_strict_policy_without_known_hosts_refuses_to_connect(
    tools, ctx, strict_without_keys, fresh_pool
):
    with pytest.raises(ToolError, match="no known-hosts entry.*ssh-keyscan"):
        await tools["get_host_load"].handler(ctx, device="no-keys")


@pytest.fixture
def wrong_host_key(org, sshd) -> Device:  # noqa: F811
    return make_device(org, sshd, name="spoofed", ssh_known_hosts=f"[127.0.0.1]:{sshd.port} {OTHER_HOST_KEY}")


async def test_a_changed_host_key_is_refused(tools, ctx, wrong_host_key, fresh_pool):
    with pytest.raises(ToolError, match="does not match the device's known hosts"):
        await tools["get_host_load"].handler(ctx, device="spoofed")


@pytest.fixture
def tofu_device(org, sshd) -> Device:  # noqa: F811
    return make_device(
        org, sshd, name="tofu", ssh_known_hosts="", ssh_host_key_policy=Device.KnownHosts.ACCEPT_NEW
    )


async def test_accept_new_records_the_host_key_on_first_use(tools, ctx, tofu_device, sshd, fresh_pool):  # noqa: F811
    await tools["get_host_load"].handler(ctx, device="tofu")
    stored = (await Device.objects.aget(pk=tofu_device.pk)).ssh_known_hosts
    assert stored.split()[:3] == sshd.known_hosts.split()[:3]
    await ssh_transport.close_all()
    again = await tools["get_host_load"].handler(ctx, device="tofu")  # now verified against the stored key
    assert again["device"] == "tofu"


@pytest.fixture
def bad_credentials(org, sshd, tmp_path) -> dict:  # noqa: F811
    import subprocess

    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "stranger")], check=True
    )
    stranger = (tmp_path / "stranger").read_text()
    make_device(org, sshd, name="stranger", ssh_private_key=stranger)
    make_device(org, sshd, name="by-password", ssh_private_key="", ssh_password="hunter2-not-the-password")
    make_device(org, sshd, name="garbled", ssh_private_key="-----BEGIN OPENSSH PRIVATE KEY-----\nnonsense\n")
    return {"stranger": stranger}


@pytest.fixture
def host_tool_log():
    """Records of the host tools' logger (Ongrid's loggers do not propagate to the root)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("agents_app.toolsets.hosts.running")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


async def test_refused_authentication_never_echoes_secrets(
    tools, ctx, bad_credentials, fresh_pool, host_tool_log
):
    for name in ("stranger", "by-password"):
        with pytest.raises(ToolError, match="was refused") as failure:
            await tools["get_host_load"].handler(ctx, device=name)
        text = str(failure.value)
        assert "hunter2" not in text and "PRIVATE KEY" not in text
        assert bad_credentials["stranger"][40:80] not in text
    with pytest.raises(ToolError, match="private key cannot be read") as garbled:
        await tools["get_host_load"].handler(ctx, device="garbled")
    assert "nonsense" not in str(garbled.value)
    logged = "\n".join(record.getMessage() for record in host_tool_log)
    assert "was refused" in logged and "private key cannot be read" in logged
    assert "hunter2" not in logged and "PRIVATE KEY" not in logged and "nonsense" not in logged


@pytest.fixture
def unreachable(org, sshd) -> Device:  # noqa: F811
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return make_device(org, sshd, name="down", ssh_port=port)


async def test_unreachable_host_is_a_clear_tool_error(tools, ctx, unreachable, fresh_pool):
    with pytest.raises(ToolError, match=r"down: cannot connect to 127\.0\.0\.1:\d+"):
        await tools["get_host_load"].handler(ctx, device="down")


def test_settings_repr_hides_credentials(device):
    transport = transport_for(device)
    assert "PRIVATE KEY" not in repr(transport.settings)


async def test_a_dropped_connection_is_replaced_transparently(device, sshd, fresh_pool):  # noqa: F811
    transport = transport_for(device)
    assert (await transport.run(Script.command("true"))).ok
    before = accepted_logins(sshd)
    pooled = next(iter(ssh_transport._POOLS[asyncio.get_running_loop()].values()))
    pooled.abort()  # what a network cut or an sshd restart does to an idle pooled connection
    again = await transport.run(Script.command("echo", "back"))
    assert again.ok and again.stdout == "back\n"
    assert accepted_logins(sshd) - before == 1


async def test_a_stop_ends_a_silent_remote_command_at_once(device, fresh_pool, tmp_path_factory):
    import time

    from agents_app.tools.cancel import CancelToken, Stopped

    fifo = tmp_path_factory.mktemp("ssh-pipe") / "never-written"
    os.mkfifo(fifo)  # `cat` blocks on it for ever and writes nothing
    transport = transport_for(device)
    token = CancelToken()
    run = asyncio.create_task(token.race(transport.run(Script.command("cat", str(fifo)))))

    deadline = time.monotonic() + 20
    while _pid_reading(fifo) is None:
        assert time.monotonic() < deadline, "the remote command never started"
        await asyncio.sleep(0.02)
    pid = _pid_reading(fifo)
    stopped_at = time.monotonic()
    token.cancel("stopped by alice")
    with pytest.raises(Stopped):
        await asyncio.wait_for(run, 5)
    assert time.monotonic() - stopped_at < 1.0  # the channel was closed, not waited out

    # The sshd is on this machine: the remote `cat` itself must be gone, not merely disconnected.
    while _alive(pid):
        assert time.monotonic() - stopped_at < 2.0, "the remote command outlived the Stop"
        await asyncio.sleep(0.02)
    quick = await transport.run(Script.command("echo", "still here"))
    assert quick.stdout.strip() == "still here"  # the pooled connection is still usable


async def test_a_timed_out_remote_command_is_ended_too(device, fresh_pool, tmp_path_factory):
    import time

    fifo = tmp_path_factory.mktemp("ssh-pipe") / "never-written"
    os.mkfifo(fifo)
    transport = transport_for(device)
    result = await transport.run(Script.command("cat", str(fifo)), time_limit=0.5)
    assert result.timed_out and result.exit_status is None
    deadline = time.monotonic() + 2
    while (pid := _pid_reading(fifo)) is not None and _alive(pid):
        assert time.monotonic() < deadline, "the timed-out remote command is still running"
        await asyncio.sleep(0.02)


async def test_a_remote_command_reading_stdin_sees_end_of_file(device, fresh_pool):
    transport = transport_for(device)
    # Our side keeps the channel's stdin open (closing it is the stop signal); the command's own
    # stdin is /dev/null, so a program that reads it ends at once instead of waiting for us.
    result = await transport.run(Script(((("cat",), ("wc", "-c")),)), time_limit=5)
    assert result.ok and result.stdout.strip() == "0"


def test_the_command_sent_over_ssh_is_the_checked_one_in_the_documented_wrapper():
    checked = Script(((("ls", "/var/log"), ("grep", "-c", "a;b")),)).render()
    line = ssh_transport.remote_command_line(checked)
    head, tail = line.split(checked)
    assert ssh_transport.remote_command_line("COMMAND") == f"{head}COMMAND{tail}"  # nothing depends on it
    documented = (Path(__file__).resolve().parents[2] / "docs" / "hosts.md").read_text()
    assert f"{head}COMMAND{tail}" in documented


def _pid_reading(path: Path) -> int | None:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if str(path).encode() in Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0"):
                    return int(entry)
            except OSError:
                continue
    return None


def _alive(pid: int) -> bool:
    """A zombie (killed, not yet reaped by its parent) counts as gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
