"""Agents answer in the user's language (agents_app.runtime.reply_language): the coordinator's per-turn
reminder carries it, a IM app's reply language wins for its threads, and a worker's brief says
which language its final answer is in while the AgentTool call's own arguments stay as sent."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from agents_app.runtime import dedupe
from agents_app.runtime.core import Runtime
from audit_app.models import AuditLog
from chat_app import services
from chat_app.models import ChatSession
from fakes.openai_server import call, text, tool_calls
from im_app.models import IMApp
from ops_app.models import Membership

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh_dedupe(monkeypatch):
    monkeypatch.setattr(dedupe, "DISPATCHES", dedupe.DispatchCache())


async def ask(chat, question: str):
    await services.abegin_turn(chat.pk, question)
    return await Runtime().run_turn(chat.pk)


def reminder_of(request) -> str:
    return next(
        m["content"] for m in reversed(request.messages) if "<system-reminder>" in (m["content"] or "")
    )


async def test_the_coordinators_reminder_carries_the_users_language(member, agents_llm):
    await Membership.objects.filter(user=member).aupdate(language="es")
    chat = await sync_to_async(services.start_chat)(member)
    agents_llm.add("default", text("Hola."))
    await ask(chat, "¿qué pasa con web-01?")
    reminder = reminder_of(agents_llm.seen["default"][0])
    assert "Reply to the user in Spanish (español) (language code es)" in reminder


async def test_without_a_setting_the_reminder_follows_the_users_words(member, agents_llm):
    chat = await sync_to_async(services.start_chat)(member)
    agents_llm.add("default", text("ok"))
    await ask(chat, "what is up with web-01?")
    assert "Reply in the language of the user's last message." in reminder_of(agents_llm.seen["default"][0])


async def test_a_chat_apps_reply_language_wins_for_its_threads(member, org, agents_llm):
    await Membership.objects.filter(user=member).aupdate(language="es")
    app = await IMApp.objects.acreate(
        organization=org, name="ops bot", platform="telegram", reply_language="zh_Hans"
    )
    chat = await sync_to_async(services.start_chat)(member, channel="telegram", thread_key=f"{app.pk}:42")
    agents_llm.add("default", text("好的"))
    await ask(chat, "web-01 怎么了")
    assert "Simplified Chinese (简体中文) (language code zh-hans)" in reminder_of(
        agents_llm.seen["default"][0]
    )


async def test_the_workers_brief_names_the_answer_language_and_the_call_is_untouched(member, agents_llm):
    await Membership.objects.filter(user=member).aupdate(language="fr")
    chat = await sync_to_async(services.start_chat)(member)
    brief = "On web-01 find what fills /var."
    arguments = {"description": "Disk on web-01", "subagent_type": "specialist-disk", "prompt": brief}
    agents_llm.add("default", tool_calls(call("AgentTool", arguments, id="d1")), text("Voilà."))
    agents_llm.add("specialist-disk", text("/var/log occupe 38 Go"))
    await ask(chat, "le disque de web-01 se remplit")
    worker_brief = [m for m in agents_llm.seen["specialist-disk"][0].messages if m["role"] == "user"][-1]
    assert worker_brief["content"].startswith(brief)
    assert "Write your final answer in French (français) (language code fr)" in worker_brief["content"]
    assert "keep tool arguments" in worker_brief["content"]
    worker = await ChatSession.objects.aget(parent_session=chat)
    assert worker.agent_id == "specialist-disk"
    row = await AuditLog.objects.filter(tool="AgentTool").afirst()
    assert json.loads(row.arguments)["prompt"] == brief  # the model's call, as it sent it
