"""Toolsets (agents_app/toolsets/, docs/extending.md): each tool declared once in its package's
manifest, and everything else derived from it: the names personas may list, the classes, the
data-source kinds, the coordinator's rules and stubs, the review gate's account of a write.

A toy toolset written to a temporary folder and named in ONGRID_TOOLSETS shows that a new
integration is one package: its read tool reaches the persona that lists it and its write tool
is held by the review gate, from the manifest alone."""

from __future__ import annotations

import dataclasses
import re
import sys
import textwrap
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ImproperlyConfigured

from agents_app.models import MutatingProposal
from agents_app.personas import registry
from agents_app.tools.binding import organization_tools
from agents_app.tools.toolbag import build_toolbag, coordinator_read_set
from agents_app.toolsets import names
from agents_app.toolsets import registry as toolsets
from agents_app.toolsets.control.manifest import AGENT_TOOL, SEND_MESSAGE, TASK_STOP
from audit_app.models import AuditLog
from fakes.openai_server import text
from ops_app.models import DataSource
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.gate import gated_call, make_chat, make_worker

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("agents_app", "audit_app", "chat_app", "evals_app", "im_app", "incidents_app", "ops_app",
           "schedules_app", "web_app", "ongrid_site")  # fmt: skip

TOY = "toy_acme_toolset"
TOY_MANIFEST = """
    from agents_app.toolsets.manifest import REASON, Toolset, ToolSpec

    TICKET = {"type": "string", "description": "An Acme ticket id."}
    ACME_LOOKUP = ToolSpec(
        "acme_lookup",
        "Look an Acme ticket up.",
        {"type": "object", "properties": {"ticket": TICKET}, "required": ["ticket"]},
    )
    ACME_REOPEN = ToolSpec(
        "acme_reopen",
        "Reopen an Acme ticket.",
        {
            "type": "object",
            "properties": {"ticket": TICKET, "reason": REASON},
            "required": ["ticket", "reason"],
            "additionalProperties": False,
        },
        tool_class="write",
    )
    TOOLSET = Toolset("acme", "Acme tickets", (ACME_LOOKUP, ACME_REOPEN))
"""
TOY_HANDLERS = """
    REOPENED = []


    async def acme_lookup(ctx, ticket):
        return {"ticket": ticket, "state": "closed", "organization": ctx.organization_id}


    async def acme_reopen(ctx, ticket, reason):
        REOPENED.append(ticket)
        return {"ticket": ticket, "state": "open"}


    def describe_acme_reopen(arguments):
        target = f"ticket:{arguments.get('ticket')}"
        return {"action": "reopen ticket", "target": target, "blast_radius": "single_device"}
"""
CLERK = """---
name: acme-clerk
description: Acme clerk — looks tickets up and reopens them
when_to_use: When an Acme ticket must be checked or reopened.
tools:
  - acme_lookup
  - acme_reopen
permission_mode: mutating-with-confirm
---
You handle Acme tickets.
"""
READER = CLERK.replace("acme-clerk", "acme-reader").replace("mutating-with-confirm", "read-only")


def write_package(folder: Path, name: str, files: dict[str, str]) -> None:
    package = folder / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    for module, source in files.items():
        (package / f"{module}.py").write_text(textwrap.dedent(source))


@pytest.fixture
def with_toolsets(settings, monkeypatch, tmp_path):
    """Install toolset packages written to a temporary folder, as ONGRID_TOOLSETS would."""

    def install(*packages: str, personas: dict[str, str] | None = None) -> None:
        agents_dir = tmp_path / "agents"
        agents_dir.mkdir(exist_ok=True)
        for name, text_ in (personas or {}).items():
            (agents_dir / f"{name}.md").write_text(text_)
        settings.CONFIG = dataclasses.replace(settings.CONFIG, toolsets=packages, agents_dirs=[agents_dir])
        registry.reset()

    monkeypatch.syspath_prepend(str(tmp_path))
    yield install
    for module in [m for m in sys.modules if m.split(".")[0].startswith("toy_")]:
        del sys.modules[module]
    toolsets.reset()
    registry.reset()


@pytest.fixture
def toy(tmp_path, with_toolsets):
    write_package(tmp_path, TOY, {"manifest": TOY_MANIFEST, "handlers": TOY_HANDLERS})
    with_toolsets(TOY, personas={"acme-clerk": CLERK, "acme-reader": READER})
    return TOY


# ---- the built-in toolsets --------------------------------------------------------------------


def test_the_names_personas_may_list_are_the_tools_that_exist_with_their_class():
    tools = toolsets.load_builtin_tools()
    assert set(names.read_tools()) == {name for name, tool in tools.items() if tool.tool_class == "read"}
    assert set(names.write_tools()) == {name for name, tool in tools.items() if tool.mutates}
    assert names.control_tools() == (AGENT_TOOL.name, SEND_MESSAGE.name, TASK_STOP.name)
    assert names.unknown_tools(["query_promql", "host_*", "mcp__grafana__*", "query_promq"]) == [
        "query_promq"
    ]


def test_every_tool_of_a_persona_file_is_declared_in_a_manifest():
    file_personas = registry.file_registry().all()
    listed = {tool for persona in file_personas for tool in persona.tools or ()}
    assert listed and names.unknown_tools(listed) == []


def test_each_fact_of_a_tool_comes_from_its_one_declaration():
    specs = toolsets.specs()
    kinds = {kind.value for kind in DataSource.Kind}
    for name, spec in specs.items():
        assert not spec.datasource or spec.datasource in kinds, name
        assert not spec.on_host or spec.owner, f"{name} runs on a host but has no owner to dispatch"
    tools = toolsets.load_builtin_tools()
    host_tools = {name for name, tool in tools.items() if tool.on_host}
    assert host_tools == {name for name, spec in specs.items() if spec.on_host}
    assert host_tools and not host_tools & set(coordinator_read_set(tools))
    # Every built-in write tells the reviewer what it changes and how far a mistake reaches.
    assert all(tool.describe is not None for tool in tools.values() if tool.mutates)
    assert toolsets.datasource_kinds()["query_alert_rules"] == DataSource.Kind.PROMETHEUS


def test_a_tool_name_is_a_literal_only_in_its_own_toolset():
    """Other modules name a tool through its declaration (`AGENT_TOOL.name`), so renaming or
    moving a tool is an edit of one package (persona files, tests and recordings aside)."""
    homes = {}
    for item in toolsets.loaded():
        folder = ROOT / Path(*item.package.split("."))
        for spec in item.toolset.tools:
            homes[spec.name] = folder
    strays = []
    for app in PRODUCT:
        for path in (ROOT / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            source = path.read_text()
            for name, home in homes.items():
                if re.search(rf"[\"']{re.escape(name)}[\"']", source) and home not in path.parents:
                    strays.append(f"{path.relative_to(ROOT)}: {name}")
    assert strays == []


# ---- a new toolset is one package ---------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_async_db_connections")
async def test_a_toolset_package_reaches_the_persona_that_lists_it(toy, org):
    assert "acme_lookup" in names.read_tools() and "acme_reopen" in names.write_tools()
    agents = await registry.aget_registry(org.pk)
    assert not [w for w in agents.warnings() if "acme" in w]
    available = await organization_tools(org.pk)
    clerk = build_toolbag(agents.by_name("acme-clerk"), available, coordinator=False)
    bag = {tool.name: tool for tool in clerk}
    assert set(bag) == {"acme_lookup", "acme_reopen"}
    assert bag["acme_lookup"].tool_class == "read" and bag["acme_reopen"].tool_class == "write"
    reader = build_toolbag(agents.by_name("acme-reader"), available, coordinator=False)
    assert [tool.name for tool in reader] == ["acme_lookup"]  # read-only never gets the write
    assert "acme_lookup" in coordinator_read_set(available)  # a read tool off any host: the coordinator's too


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_async_db_connections")
async def test_the_new_write_tool_is_held_by_the_review_gate(toy, org, member, agents_llm):
    chat = await sync_to_async(make_chat)(member, "Reopen ACME-7, the customer says it is back")
    worker = await sync_to_async(make_worker)(chat, "acme-clerk")
    agents_llm.add("reviewer", text("Decision: reject\nSOP: fail — no runbook covers reopening"))
    reason = "The customer reports the fault again; ticket history shows the same symptom."

    outcome = await gated_call(
        worker, "acme-clerk", "acme_reopen", {"ticket": "ACME-7", "reason": reason}, "re-1"
    )

    assert outcome.status == "rejected" and "no runbook covers reopening" in outcome.content
    assert sys.modules[f"{TOY}.handlers"].REOPENED == []
    proposal = await MutatingProposal.objects.aget(tool_call_id="re-1")
    assert proposal.payload["action"] == "reopen ticket" and proposal.payload["target"] == "ticket:ACME-7"
    assert (await AuditLog.objects.aget(tool_call_id="re-1")).tool_class == "write"

    agents_llm.add("reviewer", text("Decision: approve\nSOP: pass\nConcurrent work: pass\nRollback: pass"))
    approved = await gated_call(
        worker, "acme-clerk", "acme_reopen", {"ticket": "ACME-7", "reason": reason}, "re-2"
    )
    assert approved.status == "ok" and sys.modules[f"{TOY}.handlers"].REOPENED == ["ACME-7"]


def test_without_the_setting_the_toy_tools_do_not_exist(tmp_path, with_toolsets):
    write_package(tmp_path, TOY, {"manifest": TOY_MANIFEST, "handlers": TOY_HANDLERS})
    with_toolsets()
    assert names.unknown_tools(["acme_lookup"]) == ["acme_lookup"]


@pytest.mark.parametrize(
    "manifest, complaint",
    [
        (
            "from agents_app.toolsets.manifest import Toolset, ToolSpec\n"
            'TOOLSET = Toolset("dup", "x", (ToolSpec("query_promql", "again"),))\n',
            "tool 'query_promql' is declared by agents_app.toolsets.prometheus and toy_broken",
        ),
        (
            "from agents_app.toolsets.manifest import Toolset, ToolSpec\n"
            'TOOLSET = Toolset("h", "x", (ToolSpec("toy_on_host", "x", on_host=True),))\n',
            "toy_broken: toy_on_host runs on a host, so it needs an owner",
        ),
        ("TOOLSET = None\n", "toy_broken.manifest must define TOOLSET = Toolset(...)"),
    ],
)
def test_a_broken_manifest_is_refused_naming_its_package(tmp_path, with_toolsets, manifest, complaint):
    write_package(tmp_path, "toy_broken", {"manifest": manifest})
    with_toolsets("toy_broken")
    with pytest.raises(ImproperlyConfigured) as refused:
        toolsets.specs()
    assert complaint in str(refused.value)


def test_a_toolset_whose_handler_is_missing_is_refused(tmp_path, with_toolsets):
    write_package(
        tmp_path,
        "toy_nohandler",
        {"manifest": TOY_MANIFEST, "handlers": "async def acme_lookup(ctx, ticket): ...\n"},
    )
    with_toolsets("toy_nohandler")
    with pytest.raises(ImproperlyConfigured, match="acme_reopen needs exactly one handler named acme_reopen"):
        toolsets.load_builtin_tools()
