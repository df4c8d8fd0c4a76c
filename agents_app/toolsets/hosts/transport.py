"""The transport contract shared by the local and SSH implementations.

A host command is never a string handed to a shell: it is a `Script` (pipelines of argv lists
joined by `;`, `&&`, `||`), so what the read-only policy checked is exactly what runs. The local
transport executes the structure itself; the SSH transport renders it with `shlex.join`, which
quotes every word, so the remote shell can only see the operators we put there.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Literal, Protocol

Operator = Literal[";", "&&", "||"]

DEFAULT_TIMEOUT = 10.0
DEFAULT_MAX_OUTPUT = 64 * 1024


class TransportError(Exception):
    """The command could not be run at all (connection, authentication, missing program)."""


@dataclass(frozen=True)
class Script:
    """Pipelines (each a list of argv lists) and the operators that join consecutive pipelines."""

    pipelines: tuple[tuple[tuple[str, ...], ...], ...]
    operators: tuple[Operator, ...] = ()

    def __post_init__(self) -> None:
        if not self.pipelines or any(not p or any(not argv for argv in p) for p in self.pipelines):
            raise ValueError("a script needs at least one non-empty command")
        if len(self.operators) != len(self.pipelines) - 1:
            raise ValueError("operators must join consecutive pipelines")

    @classmethod
    def command(cls, *argv: str) -> Script:
        return cls(((tuple(argv),),))

    def render(self) -> str:
        """A POSIX shell command line in which every word is quoted (for SSH and for display)."""
        parts: list[str] = []
        for index, pipeline in enumerate(self.pipelines):
            if index:
                parts.append(self.operators[index - 1])
            parts.append(" | ".join(shlex.join(argv) for argv in pipeline))
        return " ".join(parts)


@dataclass(frozen=True)
class CommandResult:
    """What a command did. Sizes are the bytes produced, before truncation to the cap."""

    command: str
    exit_status: int | None
    stdout: str
    stderr: str
    stdout_bytes: int
    stderr_bytes: int
    duration_ms: int
    timed_out: bool = False
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_status == 0 and not self.timed_out

    def error_text(self) -> str:
        """The command's own complaint, for the tool result when it failed."""
        if self.timed_out:
            return f"`{self.command}` timed out after {self.duration_ms / 1000:.1f}s"
        detail = self.stderr.strip() or self.stdout.strip() or "no output"
        return f"`{self.command}` exited with status {self.exit_status}: {detail[-800:]}"


class Transport(Protocol):
    """Runs scripts on one host."""

    name: str

    async def run(
        self, script: Script, *, time_limit: float = DEFAULT_TIMEOUT, max_output: int = DEFAULT_MAX_OUTPUT
    ) -> CommandResult: ...


def decode_capped(data: bytes, total: int) -> tuple[str, bool]:
    """Decode captured bytes (lossy for binary output); report whether bytes were dropped."""
    return data.decode("utf-8", errors="replace"), total > len(data)


class CappedBuffer:
    """Keeps the first `cap` bytes of a stream while counting everything that went through it."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
