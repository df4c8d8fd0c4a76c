"""The one declaration of every tool: each toolset package's `manifest.py` holds a `TOOLSET`.

A manifest is plain data (it imports no handler, no client library), so persona validation, the
admin's tool lists, the coordinator's redirect stubs and the offline model can all read every
tool's facts without loading a single integration. docs/extending.md shows how to write one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

ToolClass = Literal["read", "write", "destructive"]
DEFAULT_TIMEOUT = 15.0

# Who hands the tool to an agent:
# - "agents": any persona that lists it (the default read set of the coordinator too, unless it
#   runs on a host); its handler is the function of the same name in the toolset's handlers.
# - "coordinator": the coordinator only, bound per turn by the runtime (AgentTool & co.).
# - "run": one run only, bound by the surface that opened the run (an investigation's report).
Scope = Literal["agents", "coordinator", "run"]
# What the toolset's tools reach: Ongrid's own database ("ongrid": evaluations run them for real,
# and the offline reviewer may approve their writes), a system outside Ongrid ("external":
# evaluations answer them from recordings), or the runtime itself ("runtime").
Backend = Literal["ongrid", "external", "runtime"]

# The parts a tool can play in the offline model's own runs (agents_app/llm/offline/).
ROLE_DISPATCH = "dispatch"  # among a persona's tools: that persona is the coordinator
ROLE_DEVICE_LIST = "device list"  # lists the devices, to read loosely written names
ROLE_INCIDENT_DETAIL = "incident detail"  # the investigator's one read
ROLE_REPORT = "report"  # among a persona's tools: this is the investigator's run


def no_parameters() -> dict:
    return {"type": "object", "properties": {}, "additionalProperties": False}


@dataclass(frozen=True)
class OfflineHints:
    """What the offline stand-in model (no LLM configured) knows of a tool beyond its schema."""

    # The nouns (English, Spanish, French) that name the records this tool lists: a plain look-up
    # question naming them ("which incidents…?") is answered by calling it directly.
    lookup_words: frozenset[str] = frozenset()
    # Among look-ups, lower ranks win when a question names two kinds of record.
    lookup_rank: int = 0
    # The look-up tool this one narrows to the open (active, firing) records.
    open_variant_of: str | None = None
    # The argument a look-up fills with the device the question names.
    device_argument: str | None = None
    # The part it plays in the offline model's own runs (one of the ROLE_* names).
    role: str | None = None
    # False: never chosen from a request's words (a tool whose description shares words with
    # every incident brief would crowd out the tools that gather evidence).
    auto_pick: bool = True


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name as the model calls it and every fact the rest of Ongrid derives from."""

    name: str
    description: str
    parameters: dict = field(default_factory=no_parameters)
    tool_class: ToolClass = "read"
    timeout: float = DEFAULT_TIMEOUT
    # The kind of the organization's data source its `datasource` argument picks (DataSource.Kind).
    datasource: str | None = None
    # Runs on a device (over SSH, or locally): never in the coordinator's default toolbag.
    on_host: bool = False
    # The specialist persona that owns it: a coordinator without the tool gets a redirect stub
    # steering the model to dispatch that specialist (docs/runtime.md, "Redirect stubs").
    owner: str | None = None
    redirect_reason: str = ""
    # Names models hallucinate for this tool on the coordinator; they redirect like it.
    also_redirects: tuple[str, ...] = ()
    scope: Scope = "agents"
    offline: OfflineHints = field(default_factory=OfflineHints)
    # What this tool reaches when it differs from its toolset's backend (a write of an "ongrid"
    # toolset that also calls a system outside Ongrid); None: the toolset's.
    backend: Backend | None = None
    # Always sent to the model, even when the agent's other tools wait behind ToolSearch: the few
    # reads most turns start with (docs/kernel.md "Deferred tools and ToolSearch"). Tools bound
    # per run or for the coordinator (scope other than "agents") are core whatever this says.
    core: bool = False

    @property
    def mutates(self) -> bool:
        return self.tool_class in ("write", "destructive")


@dataclass(frozen=True)
class Toolset:
    """One integration: its tools, what they reach, and where their handlers live."""

    name: str
    summary: str
    tools: tuple[ToolSpec, ...]
    backend: Backend = "external"
    # Modules of the package holding the handlers: for each tool of scope "agents", an async
    # function named as the tool, and for a write tool optionally `describe_<name>` (its account
    # for the reviewer).
    handlers: tuple[str, ...] = ("handlers",)


# Every write tool takes a `reason`: the evidence the reviewer judges (docs/review-gate.md).
# The one wording of a time argument's accepted forms (ops_app.core.timeutil.parse_time reads them).
TIME_HELP = "ISO 8601, epoch seconds, now or now-1h"

REASON = {
    "type": "string",
    "minLength": 10,
    "description": "Why this change, with the evidence (metrics, logs, runbook). The reviewer judges it.",
}
