"""Skills offered in a catalog and loaded on demand with the `Skill` tool, end to end through the
runtime, the real openai SDK and the fake OpenAI server (docs/skills.md)."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents_app.models import UserSkill
from agents_app.personas import registry
from agents_app.personas.skills import CATALOG_HEADER
from agents_app.runtime import dedupe
from agents_app.runtime.core import Runtime
from agents_app.toolsets.skills.manifest import SKILL_TOOL
from audit_app.models import AuditLog
from chat_app import services
from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

VACUUM_BODY = "Run VACUUM (VERBOSE, ANALYZE) on the bloated table, never VACUUM FULL in business hours."
VACUUM_DESCRIPTION = "Reclaiming PostgreSQL table bloat safely"
SKILL = SKILL_TOOL.name


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(dedupe, "DISPATCHES", dedupe.DispatchCache())
    registry.reset()
    yield
    registry.reset()


@pytest.fixture
def vacuum_skill(org):
    return UserSkill.objects.create(
        organization=org,
        name="postgres-vacuum",
        description=VACUUM_DESCRIPTION,
        body=VACUUM_BODY,
        files={"checklist.md": "1. check pg_stat_user_tables.n_dead_tup"},
    )


async def ask(user, question: str):
    chat = await sync_to_async(services.start_chat)(user)
    await services.abegin_turn(chat.pk, question)
    result = await Runtime().run_turn(chat.pk)
    return chat, result


def load(name: str, file: str | None = None, id: str = "s1") -> dict:
    arguments = {"name": name} if file is None else {"name": name, "file": file}
    return call(SKILL, arguments, id=id)


async def test_its_skill_activated_on_demand_and_visible_in_the_audit(member, vacuum_skill, agents_llm):
    agents_llm.add(
        "default",
        tool_calls(load("postgres-vacuum")),
        lambda request: text("Following the skill: " + tool_messages(request)[-1]["content"][:400]),
    )

    chat, result = await ask(member, "orders table is bloated, what do I do?")

    assert result.status == "completed"
    first, second = agents_llm.seen["default"][:2]
    # The catalog names the skill and says what it is for; its body is not in the prompt.
    assert CATALOG_HEADER in first.system_prompt
    assert f"- postgres-vacuum — {VACUUM_DESCRIPTION}" in first.system_prompt
    assert VACUUM_BODY not in first.system_prompt
    assert "[能力: postgres-vacuum]" not in first.system_prompt
    assert SKILL in first.tool_names
    # The body reaches the model in the tool result of the next request.
    loaded = json.loads(tool_messages(second)[-1]["content"])
    assert loaded["instructions"] == VACUUM_BODY and loaded["files"] == ["checklist.md"]
    assert VACUUM_BODY in result.text
    row = await AuditLog.objects.aget(session_id=chat.pk, tool=SKILL)
    assert row.status == "ok" and row.persona == "default"
    assert "postgres-vacuum" in row.arguments


async def test_an_extra_file_is_read_and_a_path_outside_the_skill_is_refused(
    member, vacuum_skill, agents_llm
):
    agents_llm.add(
        "default",
        tool_calls(
            load("postgres-vacuum", "checklist.md", id="f1"), load("postgres-vacuum", "../x", id="f2")
        ),
        lambda request: text("ok"),
    )

    await ask(member, "bloat checklist please")

    answers = {m["tool_call_id"]: m["content"] for m in tool_messages(agents_llm.seen["default"][1])}
    assert json.loads(answers["f1"])["content"].startswith("1. check pg_stat_user_tables")
    assert "inside the skill" in answers["f2"]


async def test_another_organization_never_sees_the_skill(outsider, vacuum_skill, agents_llm):
    agents_llm.add("default", tool_calls(load("postgres-vacuum")), lambda request: text("done"))

    chat, _ = await ask(outsider, "orders table is bloated")

    first, second = agents_llm.seen["default"][:2]
    assert "postgres-vacuum" not in first.system_prompt
    answer = tool_messages(second)[-1]["content"]
    assert "no skill named 'postgres-vacuum'" in answer and VACUUM_BODY not in answer
    assert await AuditLog.objects.filter(session_id=chat.pk, tool=SKILL, status="error").aexists()


async def test_a_persona_listed_skill_is_in_the_prompt_and_the_rest_only_in_the_catalog(
    member, vacuum_skill, agents_llm
):
    brief = {"description": "cpu", "subagent_type": "specialist-compute", "prompt": "Check CPU on web-01."}
    agents_llm.add("default", tool_calls(call("AgentTool", brief)), lambda request: text("done"))
    agents_llm.add("specialist-compute", text("CPU is fine"))

    await ask(member, "check the CPU of web-01")

    worker = agents_llm.seen["specialist-compute"][0].system_prompt
    assert "[能力: promql-node-exporter]" in worker  # specialist-compute lists it under `skills:`
    assert "- promql-node-exporter —" not in worker  # active, so not offered again
    assert f"- postgres-vacuum — {VACUUM_DESCRIPTION}" in worker and VACUUM_BODY not in worker
    coordinator = agents_llm.seen["default"][0].system_prompt
    assert "- incident-report —" in coordinator and "[能力: incident-report]" not in coordinator


async def test_an_always_skill_is_active_and_a_disabled_one_is_gone(member, vacuum_skill, agents_llm):
    vacuum_skill.always = True
    await vacuum_skill.asave()
    await UserSkill.objects.acreate(
        organization_id=vacuum_skill.organization_id, name="old-way", description="x", body="y", enabled=False
    )
    agents_llm.add("default", text("noted"))

    await ask(member, "hello")

    prompt = agents_llm.seen["default"][0].system_prompt
    assert f"[能力: postgres-vacuum]\n{VACUUM_BODY}" in prompt
    assert "- postgres-vacuum —" not in prompt and "old-way" not in prompt
