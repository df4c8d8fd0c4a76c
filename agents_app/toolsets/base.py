"""The tool contract every tool module writes against.

A tool module (any module in this package) declares tools with the `@tool(...)` decorator; the
catalog imports every module of the package once (`load_builtin_tools`), so adding a tool is
adding a function, never editing a list elsewhere.

Handlers are `async def handler(ctx: ToolContext, **arguments) -> str | dict | list`. They raise
`ToolError` for failures the LLM should read and correct (bad argument, backend error, not
configured); anything else they raise is a bug, reported to the LLM as an internal error.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

ToolClass = Literal["read", "write", "destructive"]
DEFAULT_TIMEOUT = 15.0
# Audit statuses a tool outcome can carry (docs/kernel.md).
STATUSES = ("ok", "error", "timeout", "redirect", "rejected", "deduped", "killed")


class ToolError(Exception):
    """A failure the model should see verbatim and can act on."""


@dataclass(frozen=True)
class ToolContext:
    """Who is calling, on whose behalf. Tools must scope every query to `organization_id`."""

    organization_id: int
    session_id: int | None = None
    user_id: int | None = None
    persona_name: str = "default"
    tool_call_id: str = ""
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolResult:
    """A handler's answer when it must set the audit status itself (control tools, redirect stubs).

    A plain return value (str, dict, list) means status `ok`.
    """

    content: Any
    status: str = "ok"

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown tool status {self.status!r}; expected one of {', '.join(STATUSES)}")


Handler = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict
    handler: Handler
    tool_class: ToolClass = "read"
    timeout: float = DEFAULT_TIMEOUT

    @property
    def mutates(self) -> bool:
        return self.tool_class in ("write", "destructive")

    def schema(self) -> dict:
        """The OpenAI function-tool schema the LLM sees."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


_BUILTIN: dict[str, Tool] = {}


def tool(
    name: str,
    description: str,
    parameters: dict | None = None,
    tool_class: ToolClass = "read",
    timeout: float = DEFAULT_TIMEOUT,
) -> Callable[[Handler], Handler]:
    """Declare `handler` as the built-in tool `name`."""

    def register(handler: Handler) -> Handler:
        if name in _BUILTIN:
            raise ValueError(f"tool {name!r} is declared twice")
        params = parameters or {"type": "object", "properties": {}, "additionalProperties": False}
        _BUILTIN[name] = Tool(name, description.strip(), params, handler, tool_class, timeout)
        return handler

    return register


def load_builtin_tools() -> dict[str, Tool]:
    """Import every module of this package (idempotent) and return the built-in tools by name."""
    package = importlib.import_module("agents_app.toolsets")
    for module in pkgutil.walk_packages(package.__path__, "agents_app.toolsets."):
        importlib.import_module(module.name)
    return dict(_BUILTIN)


def get_builtin_tool(name: str) -> Tool | None:
    return load_builtin_tools().get(name)
