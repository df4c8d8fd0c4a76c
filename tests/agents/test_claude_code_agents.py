"""Claude Code agent files load unchanged (issue 33): camelCase keys, no `when_to_use`, Claude
Code's tool names and permission modes, and model aliases resolved on the organization's own
endpoint; the import report says what was mapped, and the canonical export is snake_case."""

from __future__ import annotations

import dataclasses

import pytest
from asgiref.sync import sync_to_async
from django.core.exceptions import ValidationError
from django.urls import reverse

from agents_app.llm import model_aliases
from agents_app.llm.model_aliases import resolve_model
from agents_app.models import UserAgent
from agents_app.personas import claude_code, registry
from agents_app.personas.schema import PersonaError, parse_persona, persona_to_markdown
from agents_app.runtime.core import Runtime
from agents_app.toolsets.skills.manifest import SKILL_TOOL
from chat_app import services
from fakes.llm_routing import ByAgent
from fakes.openai_server import FakeLLM, call, text, tool_calls
from ops_app.integrations.llm_endpoints import save_llm_endpoint
from ops_app.models import LLMEndpoint
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.gate import ack_arguments, gated_call, make_chat, make_incident, make_worker

STOCK = """---
name: log-reader
description: Reads the logs of a host and says what went wrong.
tools: Read, Grep, Bash
model: sonnet
permissionMode: default
maxTurns: 5
color: blue
---

You read logs on the host and summarise the errors you find.
"""
BYPASS = """---
name: ops-bypass
description: Acknowledges incidents without asking.
tools: [Bash, acknowledge_incident]
permissionMode: bypassPermissions
---

You acknowledge incidents.
"""
ALIASES = {"sonnet": "acme-sonnet", "haiku": "acme-small"}


@pytest.fixture
def mounted(tmp_path, settings):
    """A directory of Claude Code agent files mounted through ONGRID_AGENTS_DIRS."""
    (tmp_path / "log-reader.md").write_text(STOCK, encoding="utf-8")
    (tmp_path / "ops-bypass.md").write_text(BYPASS, encoding="utf-8")
    settings.CONFIG = dataclasses.replace(settings.CONFIG, agents_dirs=(tmp_path,))
    registry.reset()
    yield tmp_path
    registry.reset()


@pytest.fixture
def acme_endpoint():
    server = FakeLLM(api_key="sk-acme-4410", models=("acme-model", "acme-sonnet")).start()
    router = ByAgent()
    server.route(router)
    try:
        yield server, router
    finally:
        server.stop()


def add_endpoint(org, server: FakeLLM) -> LLMEndpoint:
    endpoint = LLMEndpoint(
        organization=org,
        name="acme-vllm",
        base_url=server.base_url,
        api_key="sk-acme-4410",
        default_model="acme-model",
        max_retries=0,
        model_aliases=ALIASES,
    )
    return save_llm_endpoint(endpoint)


def tool_names(request) -> list[str]:
    return [tool["function"]["name"] for tool in request.body.get("tools", [])]


# ---- reading a stock file -----------------------------------------------------------------------


def test_a_stock_file_is_read_as_the_ongrid_persona_it_means_and_the_report_says_how():
    persona = parse_persona(STOCK, source="mounted", path="/agents/log-reader.md")

    assert persona.when_to_use == persona.description  # no when_to_use: dispatched by its description
    assert persona.tools == ("query_knowledge", "host_bash")
    assert persona.permission_mode == "read-only" and persona.max_turns == 5 and persona.model == "sonnet"
    assert persona.extra == {}  # `color` is Claude Code's, not kept as an unknown key
    report = "\n".join(persona.import_notes)
    assert "Tool 'Read' mapped to query_knowledge." in report
    assert "Tool 'Bash' mapped to host_bash." in report
    assert "Tool 'Grep' dropped" in report and "instead use host_bash, query_knowledge" in report
    assert "Ongrid tools a persona may list:" in report and "host_du_summary" in report
    assert "'maxTurns' read as 'max_turns'." in report and "'color' is a Claude Code setting" in report
    assert "permission mode 'default' read as 'read-only'" in report
    assert "Model 'sonnet' is an alias" in report
    # The report explains the same aliases the endpoint resolves.
    assert claude_code.MODEL_ALIASES == model_aliases.CLAUDE_CODE_ALIASES
    assert claude_code.INHERIT == model_aliases.INHERIT


def test_export_writes_the_canonical_snake_case_keys():
    exported = persona_to_markdown(parse_persona(STOCK))

    assert "permission_mode: read-only\n" in exported and "max_turns: 5\n" in exported
    assert "when_to_use: Reads the logs" in exported and "  - host_bash\n" in exported
    for claude_spelling in ("permissionMode", "maxTurns", "color:", "Grep", "- Read", "- Bash"):
        assert claude_spelling not in exported
    again = parse_persona(exported)
    assert again.import_notes == () or all("alias" in note for note in again.import_notes)
    assert dataclasses.replace(again, import_notes=()) == dataclasses.replace(
        parse_persona(STOCK), import_notes=()
    )


def test_a_key_in_both_spellings_is_an_error_naming_both(mounted):
    twice = STOCK.replace("maxTurns: 5\n", "maxTurns: 5\nmax_turns: 7\n")
    with pytest.raises(PersonaError) as caught:
        parse_persona(twice, path="/agents/twice.md")
    assert "'maxTurns' and 'max_turns' are the same key" in str(caught.value)
    assert "/agents/twice.md" in str(caught.value)

    (mounted / "twice.md").write_text(twice.replace("log-reader", "twice"), encoding="utf-8")
    registry.reset()
    warnings = registry.file_registry().warnings()
    assert any("twice.md" in w and "'maxTurns' and 'max_turns'" in w for w in warnings)
    assert registry.file_registry().by_name("twice") is None


def test_claude_code_permission_modes_never_loosen_the_gate():
    modes = {}
    for mode in ("default", "plan", "dontAsk", "acceptEdits", "bypassPermissions"):
        modes[mode] = parse_persona(STOCK.replace("permissionMode: default", f"permissionMode: {mode}"))
    assert {mode: p.permission_mode for mode, p in modes.items()} == {
        "default": "read-only",
        "plan": "read-only",
        "dontAsk": "read-only",
        "acceptEdits": "mutating-with-confirm",
        "bypassPermissions": "dual-sign-required",
    }
    # A read alias never becomes a write tool; Write/Edit are dropped, not mapped.
    writer = parse_persona(STOCK.replace("tools: Read, Grep, Bash", "tools: Read, Write, Edit, WebFetch"))
    assert writer.tools == ("query_knowledge",)
    assert "Tool 'Write' dropped" in "\n".join(writer.import_notes)


# ---- models -------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_model_aliases_resolve_on_the_endpoint_and_the_table_is_validated(org):
    endpoint = LLMEndpoint(organization=org, name="e", default_model="acme-model", model_aliases=ALIASES)

    assert resolve_model("sonnet", endpoint, "caller-model") == "acme-sonnet"
    assert resolve_model("opus", endpoint, "caller-model") == "acme-model"  # not in the table: default
    assert resolve_model("inherit", endpoint, "caller-model") == "caller-model"
    assert resolve_model("inherit", endpoint, None) == "acme-model"
    assert resolve_model("gpt-4.1", endpoint, "caller-model") == "gpt-4.1"  # a real model passes
    assert resolve_model(None, endpoint, None) == "acme-model"

    for bad in ({"sonnet": 4}, {"inherit": "x"}, {"sonnet": "opus", "opus": "o3"}, ["sonnet"]):
        endpoint.model_aliases = bad
        with pytest.raises(ValidationError):
            endpoint.full_clean()


# ---- running it ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_the_stock_file_is_dispatched_with_the_mapped_model_and_tools(
    org,
    member,
    mounted,
    acme_endpoint,
    close_async_db_connections,  # noqa: F811
):
    server, router = acme_endpoint
    await sync_to_async(add_endpoint)(org, server)
    dispatch = {
        "description": "logs",
        "subagent_type": "log-reader",
        "prompt": "Why did nginx fail on web-1?",
    }
    router.add("default", tool_calls(call("AgentTool", dispatch)), text("nginx ran out of workers."))
    router.add("log-reader", text("worker_connections are not enough"))

    chat = await sync_to_async(services.start_chat)(member)
    await services.abegin_turn(chat.pk, "why did nginx fail?")
    result = await Runtime().run_turn(chat.pk)

    assert result.status == "completed", result.error
    (worker_request,) = router.seen["log-reader"]
    assert worker_request.body["model"] == "acme-sonnet"  # `sonnet` on this organization's endpoint
    # Its mapped tools, and the Skill tool every agent offered skills carries (docs/skills.md).
    assert sorted(tool_names(worker_request)) == sorted(["host_bash", "query_knowledge", SKILL_TOOL.name])
    assert {r.body["model"] for r in router.seen["default"]} == {"acme-model"}
    assert "worker_connections are not enough" in str(router.seen["default"][-1].messages)


@pytest.mark.django_db(transaction=True)
async def test_inherit_runs_the_worker_on_the_callers_model(
    org,
    member,
    mounted,
    acme_endpoint,
    close_async_db_connections,  # noqa: F811
):
    server, router = acme_endpoint
    (mounted / "log-reader.md").write_text(STOCK.replace("model: sonnet", "model: inherit"), encoding="utf-8")
    (mounted / "default.md").write_text(
        (registry.BUILTIN_PERSONAS_DIR / "default.md")
        .read_text(encoding="utf-8")
        .replace("---\n", "---\nmodel: haiku\n", 1),
        encoding="utf-8",
    )
    registry.reset()
    await sync_to_async(add_endpoint)(org, server)
    dispatch = {"description": "logs", "subagent_type": "log-reader", "prompt": "Why?"}
    router.add("default", tool_calls(call("AgentTool", dispatch)), text("done"))
    router.add("log-reader", text("because"))

    chat = await sync_to_async(services.start_chat)(member)
    await services.abegin_turn(chat.pk, "why?")
    result = await Runtime().run_turn(chat.pk)

    assert result.status == "completed", result.error
    assert {r.body["model"] for r in router.seen["default"]} == {"acme-small"}
    assert [r.body["model"] for r in router.seen["log-reader"]] == ["acme-small"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("fresh_gate_caches")
async def test_a_bypass_permissions_persona_still_goes_through_the_reviewer_gate(
    org,
    member,
    mounted,
    agents_llm,
    close_async_db_connections,  # noqa: F811
):
    persona = (await registry.aget_registry(org.pk)).by_name("ops-bypass")
    assert persona.permission_mode == "dual-sign-required"
    chat = await sync_to_async(make_chat)(member)
    worker = await sync_to_async(make_worker)(chat, "ops-bypass")
    incident = await sync_to_async(make_incident)(org)
    agents_llm.add("reviewer", text("Decision: reject\nSOP: fail — no runbook covers this"))

    outcome = await gated_call(worker, "ops-bypass", "acknowledge_incident", ack_arguments(incident), "bp-1")

    assert outcome.status != "ok" and "reject" in outcome.content.lower()
    assert (await type(incident).objects.aget(pk=incident.pk)).status == "firing"
    assert [r for r in agents_llm.seen["reviewer"]]  # the reviewer was asked


# ---- the report in the admin --------------------------------------------------------------------


@pytest.mark.django_db
def test_the_mounted_files_admin_page_shows_the_report_and_the_snake_case_file(client, org_admin, mounted):
    client.force_login(org_admin)
    page = client.get(reverse("admin:agents_app_useragent_persona", args=["log-reader"])).content.decode()

    report = page.split('id="import-notes"', 1)[1].split("</div>", 1)[0]
    assert "Tool &#x27;Grep&#x27; dropped" in report and "mapped to host_bash" in report
    markdown = page.split('class="persona-markdown"', 1)[1]
    assert "permission_mode: read-only" in markdown and "permissionMode" not in markdown


@pytest.mark.django_db
def test_a_pasted_claude_code_agent_is_stored_canonical_and_shows_the_report(client, org, org_admin):
    client.force_login(org_admin)
    response = client.post(reverse("admin:agents_app_useragent_import"), {"text": STOCK}, follow=True)

    assert response.status_code == 200
    shown = [str(message) for message in response.context["messages"]]
    assert "Imported agent 'log-reader'." in shown
    assert any(note.startswith("Tool 'Grep' dropped") for note in shown)
    assert "Tool 'Bash' mapped to host_bash." in shown
    agent = UserAgent.objects.get(organization=org, name="log-reader")
    assert agent.tools == ["query_knowledge", "host_bash"] and agent.permission_mode == "read-only"
    assert agent.max_turns == 5 and agent.when_to_use == agent.description and agent.extra == {}
    exported = client.get(reverse("admin:agents_app_useragent_markdown", args=[agent.pk])).content.decode()
    assert "max_turns: 5" in exported and "maxTurns" not in exported


@pytest.mark.django_db
def test_the_endpoint_admin_saves_a_valid_alias_table_and_refuses_a_bad_one(client, org, org_admin):
    client.force_login(org_admin)
    form = {"name": "acme-vllm", "default_model": "acme-model", "timeout": "30", "max_retries": "1"}
    add = reverse("admin:ops_app_llmendpoint_add")

    refused = client.post(add, {**form, "model_aliases": '{"sonnet": "opus", "opus": "o3"}'})
    assert refused.status_code == 200 and "maps to another alias" in refused.content.decode()
    assert not LLMEndpoint.objects.exists()
    assert client.post(add, {**form, "model_aliases": '{"sonnet": "gpt-4o"}'}).status_code == 302
    endpoint = LLMEndpoint.objects.get(organization=org)
    assert endpoint.model_aliases == {"sonnet": "gpt-4o"}
    change = reverse("admin:ops_app_llmendpoint_change", args=[endpoint.pk])
    assert client.post(change, {**form, "model_aliases": ""}).status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.model_aliases == {}
