"""What a tool is, once it is ready to be handed to an agent.

A tool is declared once, in its toolset's manifest (`agents_app/toolsets/manifest.py`); the
toolset registry binds the declaration to its handler and makes the `Tool` the call chain runs.
Tools that only exist for one run (the coordinator's control tools, a surface's submit tool) are
made from their declaration with `Tool.from_spec` by whoever owns that run.

Handlers are `async def handler(ctx: ToolContext, **arguments) -> str | dict | list`. They raise
`ToolError` for failures the LLM should read and correct (bad argument, backend error, not
configured); anything else they raise is a bug, reported to the LLM as an internal error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agents_app.toolsets.manifest import DEFAULT_TIMEOUT, ToolClass, ToolSpec

# Audit statuses a tool outcome can carry (docs/kernel.md).
STATUSES = ("ok", "error", "timeout", "redirect", "rejected", "deduped", "killed")
# Ends the description of a tool whose back end the organization has not configured: the model is
# told not to spend a step on it (the offline model skips it; agents_app.tools.binding writes it).
UNCONFIGURED = "Not configured for this organization"


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
# A write tool's account of one call for the reviewer: {action, target, blast_radius}; it raises
# ToolError for a call that can never be allowed (docs/review-gate.md).
Describer = Callable[[dict], dict]
# A write tool's rehearsal of one call, run by the gate after `describe` and before the reviewer
# (docs/review-gate.md "Dry run"): {ok, summary, diff, ...}; `ok: False` rejects the call unreviewed.
Previewer = Callable[["ToolContext", dict], Awaitable[dict]]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    parameters: dict
    handler: Handler
    tool_class: ToolClass = "read"
    timeout: float = DEFAULT_TIMEOUT
    describe: Describer | None = field(default=None, compare=False)
    preview: Previewer | None = field(default=None, compare=False)
    # Runs on a device: kept off the coordinator's default toolbag (docs/runtime.md).
    on_host: bool = False
    # Never deferred behind ToolSearch (ToolSpec.core, or a tool bound per run / for the coordinator).
    core: bool = False
    # A redirect stub: callable by name but never offered once tools are deferred (docs/kernel.md).
    redirect: bool = False

    @classmethod
    def from_spec(cls, spec: ToolSpec, handler: Handler, **overrides: Any) -> Tool:
        """The tool `spec` declares, run by `handler` (`overrides`: e.g. a run-time description)."""
        fields = {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
            "tool_class": spec.tool_class,
            "timeout": spec.timeout,
            "on_host": spec.on_host,
            "core": spec.core or spec.scope != "agents",
        }
        return cls(handler=handler, **{**fields, **overrides})

    @property
    def mutates(self) -> bool:
        return self.tool_class in ("write", "destructive")

    def schema(self) -> dict:
        """The OpenAI function-tool schema the LLM sees."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }
