"""Bytes of a model request, part by part, per shipped persona: with ToolSearch deferring tool
schemas and without (docs/kernel.md, "Deferred tools and ToolSearch"), and for a coordinator whose
organization adds MCP tools.

    .venv/bin/python bench/tool_bytes.py [--mcp 0,40,100] [--json FILE]

No model and no database: the parts are built as the kernel builds them (compose_system_prompt with
the built-in skills, system_reminder with the reply-language line, the toolbag with `Skill`, and
its plan) and measured as the JSON the openai SDK sends; "first request" is a turn's first body.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ongrid_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only")
os.environ.setdefault("ONGRID_DATA_DIR", tempfile.mkdtemp(prefix="ongrid-bench-"))

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from agents_app.kernel.prompt import compose_system_prompt, system_reminder  # noqa: E402
from agents_app.personas.catalog import NOT_DISPATCHABLE, agent_catalog  # noqa: E402
from agents_app.personas.registry import get_registry  # noqa: E402
from agents_app.personas.skills import offer_for  # noqa: E402
from agents_app.runtime.control_tools import stub_tool  # noqa: E402
from agents_app.runtime.reply_language import reminder_line  # noqa: E402
from agents_app.tools.deferral import plan_tools  # noqa: E402
from agents_app.tools.toolbag import build_toolbag  # noqa: E402
from agents_app.toolsets.contract import Tool  # noqa: E402
from agents_app.toolsets.control.manifest import AGENT_TOOL, SEND_MESSAGE, TASK_STOP  # noqa: E402
from agents_app.toolsets.registry import load_builtin_tools, redirects  # noqa: E402
from agents_app.toolsets.skills.handlers import skill_tool  # noqa: E402

COORDINATOR = "default"
# The first request of a turn also carries the question and the SDK's envelope.
QUESTION = "What is the p99 latency of checkout over the last hour?"


def size(value) -> int:
    """Bytes of `value` as the SDK serialises it (compact JSON, UTF-8)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


async def _noop(ctx, **arguments):
    return ""


def mcp_tools(count: int) -> list[Tool]:
    """`count` MCP tools shaped like a typical server's: a sentence and two arguments each."""
    schema = {
        "type": "object",
        "properties": {
            "repository": {"type": "string", "description": "owner/name of the repository"},
            "query": {"type": "string", "description": "What to look for"},
        },
        "required": ["repository"],
    }
    return [
        Tool(
            f"mcp__github__operation_{i:03d}",
            f"GitHub operation {i}: reads one kind of record.",
            schema,
            _noop,
        )
        for i in range(count)
    ]


def toolbag(persona, extra: list[Tool]) -> list[Tool]:
    """The persona's tools as the runtime binds them: toolbag, control tools and stubs, `Skill`."""
    available = {**load_builtin_tools(), **{tool.name: tool for tool in extra}}
    skill = skill_tool(offer_for(persona, None))
    skills = [skill] if skill else []
    if not persona.is_coordinator:
        return build_toolbag(persona, available, coordinator=False) + skills
    control = {spec.name: Tool.from_spec(spec, _noop) for spec in (AGENT_TOOL, SEND_MESSAGE, TASK_STOP)}
    bag = build_toolbag(persona, {**available, **control}, coordinator=True)
    present = {tool.name for tool in bag}
    return bag + [stub_tool(stub) for stub in redirects() if stub.name not in present] + skills


def parts(persona, catalog: str | None, bag: list[Tool], *, search: bool) -> dict:
    settings.CONFIG = dataclasses.replace(settings.CONFIG, tool_search=search)
    plan = plan_tools(persona, bag)
    offer = offer_for(persona, None)  # the built-in skills: an organization's own would add to them
    prompt = compose_system_prompt("", persona, offer.active, catalog, offer.catalog)
    system = {"role": "system", "content": prompt}
    language = reminder_line("") if persona.is_coordinator else ""
    reminder = {"role": "system", "content": system_reminder(persona, catalog, language)}
    schemas = [tool.schema() for tool in plan.offered]
    first = {
        "model": settings.CONFIG.model,
        "messages": [system, {"role": "user", "content": QUESTION}, reminder],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": schemas,
    }
    return {
        "system prompt": size(system),
        "reminder": size(reminder),
        "tool schemas": size(schemas),
        "first request": size(first),
        "tools sent": len(plan.offered),
        "tools deferred": len(plan.shelf.tools) if plan.shelf else 0,
    }


def measure(mcp_counts: list[int]) -> list[dict]:
    registry = get_registry()
    specialists = [p for p in registry.all() if p.name not in NOT_DISPATCHABLE]
    catalog = agent_catalog(specialists)
    rows = []
    for persona in sorted(registry.all(), key=lambda p: (p.name != COORDINATOR, p.name)):
        counts = mcp_counts if persona.is_coordinator else [0]
        for count in counts:
            bag = toolbag(persona, mcp_tools(count))
            row = {"persona": persona.name, "mcp tools": count}
            for search in (False, True):
                row["on" if search else "off"] = parts(persona, catalog, bag, search=search)
            rows.append(row)
    return rows


def report(rows: list[dict]) -> None:
    print(
        f"{'persona':28} {'mcp':>4} {'prompt':>7} {'remind':>7} {'tools off':>10} {'tools on':>9} "
        f"{'sent/deferred':>14} {'request off':>12} {'request on':>11} {'first request':>14}"
    )
    for row in rows:
        off, on = row["off"], row["on"]
        whole = {
            key: part["system prompt"] + part["reminder"] + part["tool schemas"]
            for key, part in row.items()
            if key in ("off", "on")
        }
        print(
            f"{row['persona']:28} {row['mcp tools']:>4} {on['system prompt']:>7} {on['reminder']:>7} "
            f"{off['tool schemas']:>10} {on['tool schemas']:>9} "
            f"{on['tools sent']:>6}/{on['tools deferred']:<7} {whole['off']:>12} {whole['on']:>11} "
            f"{on['first request']:>14}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mcp", default="0,40,100", help="MCP tool counts for the coordinator")
    parser.add_argument("--json", help="also write the figures to this file")
    options = parser.parse_args()
    rows = measure([int(n) for n in options.mcp.split(",") if n.strip()])
    report(rows)
    if options.json:
        Path(options.json).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
