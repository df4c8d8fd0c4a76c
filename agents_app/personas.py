"""Persona values. Parsing (`parse_persona`) is implemented by the personas/registry work (issue 3);
the fields below are the contract the kernel and runtime rely on."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PERMISSION_MODES = ("read-only", "mutating-with-confirm", "dual-sign-required")
COORDINATOR = "default"
REVIEWER = "reviewer"


class PersonaError(Exception):
    """A persona file or row that cannot be used; carries where it came from."""

    def __init__(self, message: str, path: str | None = None):
        self.message = message
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


@dataclass(frozen=True)
class Persona:
    name: str
    description: str
    when_to_use: str
    body: str = ""
    tools: tuple[str, ...] | None = None  # None: the coordinator's read-only set
    disallowed_tools: tuple[str, ...] = ()
    permission_mode: str = "read-only"
    max_turns: int = 15
    max_tool_calls: int | None = None
    model: str | None = None
    critical_reminder: str = ""
    skills: tuple[str, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)  # unknown front-matter keys, kept
    source: str = "builtin"  # builtin | mounted | user
    path: str | None = None

    @property
    def is_coordinator(self) -> bool:
        return self.name == COORDINATOR


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    source: str = "builtin"
    path: str | None = None
