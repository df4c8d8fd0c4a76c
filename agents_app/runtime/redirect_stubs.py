"""Redirect stubs (docs/runtime.md): tool names the LLM is known to hallucinate on the coordinator,
each mapped to the specialist that owns the real tool. Plain data: append a row when evals show a new
hallucination, and keep the list short, since every stub costs a schema slot in the prompt."""

from __future__ import annotations

import json
from dataclasses import dataclass

WHY_STUB_EXISTS = (
    "The coordinator's job is dispatch and triage. Deep-dive tools live on specialist workers; "
    "calling them inline is the wrong pattern."
)


@dataclass(frozen=True)
class RedirectStub:
    name: str
    specialist: str
    reason: str


STUBS: tuple[RedirectStub, ...] = (
    RedirectStub("get_host_load", "specialist-compute", "host load, CPU and memory are read on the host"),
    RedirectStub("get_host_processes", "specialist-compute", "process listings are read on the host"),
    RedirectStub("host_du_summary", "specialist-disk", "directory usage analysis runs on the host"),
    RedirectStub("host_find_large_files", "specialist-disk", "large-file hunts run on the host"),
    RedirectStub("host_stat_file", "specialist-disk", "file metadata is read on the host"),
    RedirectStub("host_probe_http", "specialist-network", "HTTP probes run from a host"),
    RedirectStub("host_probe_dns", "specialist-network", "DNS probes run from a host"),
    RedirectStub("host_probe_tcp", "specialist-network", "TCP probes run from a host"),
    RedirectStub("host_bash", "specialist-ops", "shell inspection runs on the host under a read-only policy"),
    RedirectStub(
        "host_restart_service", "specialist-ops", "service restarts are changes that pass the review gate"
    ),
    RedirectStub("correlate_incident", "incident-investigator", "correlation is a root-cause investigation"),
    RedirectStub("query_logql", "incident-investigator", "log searches belong to an investigation"),
    RedirectStub("query_traceql", "incident-investigator", "trace searches belong to an investigation"),
    RedirectStub(
        "restart_service", "specialist-ops", "service restarts are changes that pass the review gate"
    ),
    RedirectStub(
        "run_command", "specialist-ops", "shell inspection runs on the host under a read-only policy"
    ),
)
STUBS_BY_NAME = {stub.name: stub for stub in STUBS}


def redirect_payload(stub: RedirectStub, arguments: dict | None = None) -> dict:
    """The JSON the stub returns: enough for the model to re-issue the call through AgentTool."""
    args = json.dumps(arguments or {}, ensure_ascii=False, sort_keys=True)[:300]
    brief = f"<self-contained task: what to find out with {stub.name} {args}, and why the user asked>"
    suggested = (
        f'AgentTool(description="<one line>", subagent_type="{stub.specialist}", '
        f"prompt={json.dumps(brief, ensure_ascii=False)})"
    )
    return {
        "status": "redirect",
        "hint": (
            f"{stub.name} is not available in coordinator scope. Re-invoke via AgentTool to dispatch "
            f"to {stub.specialist}."
        ),
        "reason": stub.reason,
        "suggested_call": suggested,
        "why_stub_exists": WHY_STUB_EXISTS,
    }
