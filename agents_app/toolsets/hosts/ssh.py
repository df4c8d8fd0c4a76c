"""The SSH transport: commands on a device over asyncssh, with connection reuse.

Credentials come from the device row and stay in memory: they are never part of a log line, an
error message or a result (`redact` scrubs any error text that might echo them). Connections are
pooled per event loop and per credential set, so a worker's burst of tool calls pays the
handshake once; a closed connection is replaced transparently.

Stopping a remote command: OpenSSH's sshd ignores the "signal" channel request, and closing the
channel only closes the command's pipes, so a command that writes nothing would run on. Every
command therefore runs inside `remote_command_line`'s fixed wrapper, whose guard waits for the
channel's stdin to reach end-of-file — which happens only when we send EOF or close the channel
(Stop, time limit) — and then kills the session's process group. Output and exit status are the
command's own; its stdin is /dev/null, as before.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import asyncssh

from agents_app.toolsets.hosts.transport import (
    DEFAULT_MAX_OUTPUT,
    DEFAULT_TIMEOUT,
    CappedBuffer,
    CommandResult,
    Script,
    TransportError,
    decode_capped,
)

CONNECT_TIMEOUT = 10.0
REMOTE_PRELUDE = "export LC_ALL=C LANG=C; "
# The guard: fd 3 keeps the channel's stdin; a background loop reads it (we never write) and, at
# end-of-file, KILLs process group 0 — the session sshd made with setsid(): the shell, the command's
# pipeline and the guard itself. The command runs in the foreground with stdin from /dev/null and
# without fd 3; when it ends by itself, the guard is dismissed and its status is the shell's.
STOP_GUARD_HEAD = (
    "exec 3<&0 </dev/null; "
    "{ while read -r ongrid_line; do :; done; kill -s KILL 0; } <&3 >/dev/null 2>&1 & "
    "ongrid_guard=$!; { "
)
STOP_GUARD_TAIL = ' ; } 3<&-; ongrid_status=$?; kill "$ongrid_guard" 2>/dev/null; exit "$ongrid_status"'

HostKeyCallback = Callable[[str], Awaitable[None]]


@dataclass(frozen=True)
class SSHSettings:
    host: str
    port: int
    username: str
    private_key: str = field(default="", repr=False)
    password: str = field(default="", repr=False)
    known_hosts: str = field(default="", repr=False)
    host_key_policy: str = "strict"

    def pool_key(self) -> tuple:
        secret = hashlib.sha256(
            "\0".join((self.private_key, self.password, self.known_hosts, self.host_key_policy)).encode()
        ).hexdigest()
        return (self.host, self.port, self.username, secret)

    def redact(self, text: str) -> str:
        for secret in (self.private_key, self.password):
            if secret:
                text = text.replace(secret, "[redacted]")
        return text


# Connections belong to the event loop that opened them; a loop that goes away takes its pool along.
_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple, asyncssh.SSHClientConnection]] = (
    weakref.WeakKeyDictionary()
)
_LOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple, asyncio.Lock]] = (
    weakref.WeakKeyDictionary()
)


class SSHTransport:
    name = "ssh"

    def __init__(self, settings: SSHSettings, on_new_host_key: HostKeyCallback | None = None) -> None:
        self.settings = settings
        self.on_new_host_key = on_new_host_key

    async def run(
        self, script: Script, *, time_limit: float = DEFAULT_TIMEOUT, max_output: int = DEFAULT_MAX_OUTPUT
    ) -> CommandResult:
        started = time.monotonic()
        command = script.render()
        proc = await self._open_process(remote_command_line(command))
        out, err = CappedBuffer(max_output), CappedBuffer(max_output)
        status: int | None = None
        timed_out = False
        try:
            async with asyncio.timeout(time_limit):
                await asyncio.gather(_pump(proc.stdout, out), _pump(proc.stderr, err))
                completed = await proc.wait()
                status = completed.exit_status
        except TimeoutError:
            timed_out = True
        finally:
            if proc.exit_status is None:  # timed out or stopped: EOF fires the guard, then close
                _end_quietly(proc)
        stdout, cut_out = decode_capped(bytes(out.data), out.total)
        stderr, cut_err = decode_capped(bytes(err.data), err.total)
        return CommandResult(
            command=command,
            exit_status=status,
            stdout=stdout,
            stderr=self.settings.redact(stderr),
            stdout_bytes=out.total,
            stderr_bytes=err.total,
            duration_ms=int((time.monotonic() - started) * 1000),
            timed_out=timed_out,
            truncated=cut_out or cut_err,
        )

    async def _open_process(self, command: str) -> asyncssh.SSHClientProcess:
        """Open a session; a pooled connection that died meanwhile is replaced once."""
        for attempt in (1, 2):
            conn = await self._connection()
            try:
                # stdin stays a pipe we never write to: its end-of-file is the wrapper's stop signal.
                return await conn.create_process(command, encoding=None)
            except (asyncssh.Error, OSError) as exc:
                self._forget(conn)
                if attempt == 2:
                    reason = self._describe(exc) if isinstance(exc, asyncssh.Error) else str(exc)
                    raise TransportError(f"cannot open a session: {reason}") from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _forget(self, conn: asyncssh.SSHClientConnection) -> None:
        pool = _POOLS.get(asyncio.get_running_loop(), {})
        for key, pooled in list(pool.items()):
            if pooled is conn:
                del pool[key]
        conn.close()

    async def _connection(self) -> asyncssh.SSHClientConnection:
        loop = asyncio.get_running_loop()
        key = self.settings.pool_key()
        pool = _POOLS.setdefault(loop, {})
        lock = _LOCKS.setdefault(loop, {}).setdefault(key, asyncio.Lock())
        async with lock:
            conn = pool.get(key)
            if conn is not None and not conn.is_closed():
                return conn
            conn = await self._connect()
            pool[key] = conn
            return conn

    async def _connect(self) -> asyncssh.SSHClientConnection:
        s = self.settings
        options: dict = {
            "host": s.host,
            "port": s.port,
            "username": s.username,
            "known_hosts": self._known_hosts(),
            "agent_path": None,
            "config": None,
            "client_keys": None,
            "password": s.password or None,
            "connect_timeout": CONNECT_TIMEOUT,
            "login_timeout": CONNECT_TIMEOUT,
            "keepalive_interval": 30,
        }
        if s.private_key:
            try:
                options["client_keys"] = [asyncssh.import_private_key(s.private_key)]
            except (asyncssh.KeyImportError, ValueError):
                raise TransportError(
                    "the device's SSH private key cannot be read (unsupported format, or protected by a "
                    "passphrase, which Ongrid does not support)"
                ) from None
        try:
            conn = await asyncssh.connect(**options)
        except asyncssh.HostKeyNotVerifiable as exc:
            raise TransportError(
                f"the host key of {s.host}:{s.port} does not match the device's known hosts "
                f"({self._describe(exc)}); if the host was reinstalled, update the device's known hosts"
            ) from None
        except asyncssh.PermissionDenied:
            raise TransportError(
                f"authentication as {s.username!r} on {s.host}:{s.port} was refused (check the device's "
                "SSH key or password)"
            ) from None
        except asyncssh.Error as exc:
            raise TransportError(f"SSH to {s.host}:{s.port} failed: {self._describe(exc)}") from None
        except (OSError, TimeoutError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise TransportError(
                f"cannot connect to {s.host}:{s.port}: {self.settings.redact(reason)}"
            ) from None
        if s.host_key_policy == "accept-new" and not s.known_hosts.strip() and self.on_new_host_key:
            await self.on_new_host_key(self._known_hosts_line(conn))
        return conn

    def _known_hosts(self) -> asyncssh.SSHKnownHosts | None:
        s = self.settings
        if s.host_key_policy == "ignore":
            return None
        if not s.known_hosts.strip():
            if s.host_key_policy == "accept-new":
                return None  # trust on first use; the key is recorded right after connecting
            raise TransportError(
                f"the device uses the strict host-key policy but has no known-hosts entry; add the "
                f"output of `ssh-keyscan -p {s.port} {s.host}` to it, or choose trust on first use"
            )
        try:
            return asyncssh.import_known_hosts(s.known_hosts)
        except (ValueError, asyncssh.KeyImportError) as exc:
            raise TransportError(f"the device's known-hosts text is invalid: {exc}") from None

    def _known_hosts_line(self, conn: asyncssh.SSHClientConnection) -> str:
        s = self.settings
        public = conn.get_server_host_key().export_public_key("openssh").decode().split()
        pattern = s.host if s.port == 22 else f"[{s.host}]:{s.port}"
        return f"{pattern} {public[0]} {public[1]}"

    def _describe(self, exc: asyncssh.Error) -> str:
        return self.settings.redact(exc.reason or type(exc).__name__)


def remote_command_line(command: str) -> str:
    """The exact line sent to the host: the policy-checked command inside the fixed stop guard."""
    return REMOTE_PRELUDE + STOP_GUARD_HEAD + command + STOP_GUARD_TAIL


def _end_quietly(proc: asyncssh.SSHClientProcess) -> None:
    """Send EOF (the guard kills the remote command on it) and close the channel, which sshd also
    turns into EOF on the command's stdin should the EOF message itself not get through."""
    try:
        proc.stdin.write_eof()
    except (asyncssh.Error, OSError):
        pass
    proc.close()


async def _pump(stream: asyncssh.SSHReader, sink: CappedBuffer) -> None:
    while chunk := await stream.read(65536):
        sink.feed(chunk)


async def close_all() -> None:
    """Close every pooled connection of the running loop (tests, shutdown)."""
    loop = asyncio.get_running_loop()
    connections = _POOLS.pop(loop, {})
    _LOCKS.pop(loop, None)
    for conn in connections.values():
        conn.close()
        await conn.wait_closed()
