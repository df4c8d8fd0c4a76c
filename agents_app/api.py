"""The agents layer's front door: everything the surfaces (web pages and API, IM bridges,
investigations, schedules, evaluations) and the project use of it, and nothing else.

This is the Python interface of the layer, not an HTTP API (that is `web_app/*/api.py`).
Surfaces import `from agents_app import api as agents` (and the models from `agents_app.models`);
an import-linter contract keeps them out of the inner packages, so those can be rearranged
without touching a surface (docs/architecture.md, "Inside the agents layer").
"""

from __future__ import annotations

from agents_app.gate.direct_calls import CallRefused, request_call
from agents_app.gate.proposals import ProposalClosed, describe_proposal, may_sign, sign
from agents_app.llm.base import LLMCompletion, LLMError
from agents_app.llm.openai_provider import OpenAIProvider
from agents_app.personas.catalog import agent_catalog, first_line, specialists
from agents_app.personas.hot_reload import start as watch_agent_files
from agents_app.personas.registry import aget_registry, get_registry
from agents_app.personas.schema import Persona, PersonaError
from agents_app.personas.user_agents import PERSONA_FIELDS, field_errors, is_org_admin, to_markdown
from agents_app.runtime import events
from agents_app.runtime.core import get_runtime
from agents_app.runtime.executors import reap_at_startup, remember_main_loop, run_in_background
from agents_app.runtime.reply_language import normalize as normalize_language
from agents_app.runtime.reply_language import register_thread_language
from agents_app.runtime.tasks import run_on_worker_loop
from agents_app.runtime.turns import (
    TurnsBusy,
    astart_turn,
    last_answer,
    start_turn,
    wait_for_turn,
    waiting_slot,
)
from agents_app.tools.replay import MATCHERS, Recording, Replay, replaying
from agents_app.tools.toolbag import build_toolbag
from agents_app.toolsets.contract import Tool, ToolContext, ToolError
from agents_app.toolsets.control.manifest import AGENT_TOOL
from agents_app.toolsets.incidents.manifest import (
    ACKNOWLEDGE_INCIDENT,
    GET_INCIDENT_DETAIL,
    RESOLVE_INCIDENT,
    SILENCE_INCIDENT,
)
from agents_app.toolsets.names import control_tools
from agents_app.toolsets.prometheus.manifest import QUERY_PROMQL
from agents_app.toolsets.registry import backend_of, load_builtin_tools, redirects, toolset_of
from agents_app.toolsets.submissions.manifest import SUBMIT_FINDING, SUBMIT_REPORT
from agents_app.toolsets.tool_search.manifest import TOOL_SEARCH

__all__ = [
    # turns and the runtime (docs/runtime.md)
    "astart_turn",
    "start_turn",
    "wait_for_turn",
    "waiting_slot",
    "TurnsBusy",
    "last_answer",
    "get_runtime",
    "run_in_background",
    "reap_at_startup",
    "remember_main_loop",
    "run_on_worker_loop",
    "events",
    "normalize_language",
    "register_thread_language",
    # the review gate's proposals and one-click changes (docs/review-gate.md)
    "describe_proposal",
    "may_sign",
    "sign",
    "ProposalClosed",
    "request_call",
    "CallRefused",
    # personas (docs/personas.md)
    "Persona",
    "PersonaError",
    "PERSONA_FIELDS",
    "field_errors",
    "is_org_admin",
    "to_markdown",
    "agent_catalog",
    "first_line",
    "specialists",
    "get_registry",
    "aget_registry",
    "watch_agent_files",
    # tools (docs/extending.md)
    "Tool",
    "ToolContext",
    "ToolError",
    "build_toolbag",
    "load_builtin_tools",
    "control_tools",
    "redirects",
    "toolset_of",
    "backend_of",
    "AGENT_TOOL",
    "ACKNOWLEDGE_INCIDENT",
    "GET_INCIDENT_DETAIL",
    "RESOLVE_INCIDENT",
    "SILENCE_INCIDENT",
    "QUERY_PROMQL",
    "SUBMIT_REPORT",
    "SUBMIT_FINDING",
    "TOOL_SEARCH",
    # evaluations (docs/evals.md)
    "MATCHERS",
    "Recording",
    "Replay",
    "replaying",
    "LLMCompletion",
    "LLMError",
    "OpenAIProvider",
]
