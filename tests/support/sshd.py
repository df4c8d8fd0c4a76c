"""A real OpenSSH server (Debian's openssh-server) on a free loopback port, for the SSH transport.

Everything is throwaway and lives in a temporary directory: the host key, the client key, the
authorized_keys file, the config and the pid file. The server runs as the test user (root in CI),
which is why the config allows root logins by key only.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.required import require

SSHD = "/usr/sbin/sshd"


@dataclass(frozen=True)
class SSHServer:
    host: str
    port: int
    username: str
    private_key: str = field(repr=False)
    known_hosts: str
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_banner(port: int, proc: subprocess.Popen, log: Path, deadline_s: float = 20) -> None:
    deadline = time.monotonic() + deadline_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                if sock.recv(64).startswith(b"SSH-2.0"):
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"sshd did not answer within {deadline_s}s:\n{log.read_text(errors='replace')}"
            )
        time.sleep(0.05)


def start_sshd(directory: Path) -> tuple[subprocess.Popen, SSHServer]:
    _keygen(directory / "host_key")
    _keygen(directory / "client_key")
    authorized = directory / "authorized_keys"
    shutil.copy(directory / "client_key.pub", authorized)
    authorized.chmod(0o600)
    port = _free_port()
    config = directory / "sshd_config"
    config.write_text(
        "\n".join(
            [
                f"Port {port}",
                "ListenAddress 127.0.0.1",
                f"HostKey {directory / 'host_key'}",
                f"PidFile {directory / 'sshd.pid'}",
                f"AuthorizedKeysFile {authorized}",
                "PermitRootLogin prohibit-password",
                "PubkeyAuthentication yes",
                "PasswordAuthentication yes",
                "KbdInteractiveAuthentication no",
                "StrictModes no",
                "UsePAM no",
                "LogLevel VERBOSE",
                "MaxSessions 20",
                "",
            ]
        )
    )
    # Debian's service creates the privilege-separation directory; a bare sshd needs it too.
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = directory / "sshd.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdout=sink, stderr=subprocess.STDOUT)
    try:
        _wait_for_banner(port, proc, log)
    except RuntimeError:
        proc.kill()
        proc.wait()
        raise
    host_public = (directory / "host_key.pub").read_text().split()
    server = SSHServer(
        host="127.0.0.1",
        port=port,
        username=pwd.getpwuid(os.getuid()).pw_name,
        private_key=(directory / "client_key").read_text(),
        known_hosts=f"[127.0.0.1]:{port} {host_public[0]} {host_public[1]}",
        log_path=log,
    )
    return proc, server


@pytest.fixture(scope="module")
def sshd(tmp_path_factory) -> Iterator[SSHServer]:
    require(
        os.path.exists(SSHD) and shutil.which("ssh-keygen") is not None, "OpenSSH server (/usr/sbin/sshd)"
    )
    require(os.geteuid() == 0 or Path("/run/sshd").is_dir(), "root, or an existing /run/sshd, for sshd")
    proc, server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
