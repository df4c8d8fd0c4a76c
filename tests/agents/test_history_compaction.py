"""Long chats (docs/chat.md, "Long chats"): past ONGRID_HISTORY_TOKENS the earlier turns are
summarised by the chat's model, the summary is stored, sent ahead of the recent turns and shown in
the audit pages; a question about the first turn can still be answered; without a model, or when
it fails, the turns' own words stand in."""

from __future__ import annotations

import dataclasses
import json

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse

from agents_app.llm.offline.provider import OfflineProvider
from agents_app.runtime.compaction import SUMMARISER, history_for_turn
from agents_app.runtime.core import Runtime
from audit_app.models import LLMCall
from chat_app import services
from chat_app.models import HistorySummary
from fakes.openai_server import error, text

pytestmark = pytest.mark.django_db(transaction=True)

FIRST = "We restarted db-07 at 09:14 under change CHG-4411; keep an eye on it."
FIRST_ANSWER = "Noted: db-07 was restarted at 09:14 (CHG-4411). Its replication lag is back to 0 s."
QUESTION = "Which database host did we restart this morning, and under which change?"
SUMMARY = "- db-07 restarted at 09:14 under CHG-4411; replication lag back to 0 s.\n- web tier checked."


def seed(member, turns: int = 10):
    """A chat of `turns` earlier turns, each with a tool exchange of ~400 characters."""
    chat = services.start_chat(member)
    for index in range(turns):
        question = FIRST if index == 0 else f"Turn {index}: how is web-{index:02d} doing right now?"
        services.append_message(chat.pk, "user", question)
        call = {
            "id": f"c{index}",
            "type": "function",
            "function": {"name": "query_promql", "arguments": "{}"},
        }
        services.append_message(chat.pk, "assistant", "", tool_calls=[call])
        result = json.dumps({"series": [{"host": f"web-{index:02d}", "cpu": [0.31] * 40}]})
        services.append_message(chat.pk, "tool", result, tool_call_id=f"c{index}")
        answer = FIRST_ANSWER if index == 0 else f"web-{index:02d} runs at 31 % CPU, nothing unusual."
        services.append_message(chat.pk, "assistant", answer)
    return chat


@pytest.fixture
def budget(settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, history_tokens=600)


async def ask(chat, question: str = QUESTION):
    await services.abegin_turn(chat.pk, question)
    return await Runtime().run_turn(chat.pk)


@pytest.mark.usefixtures("budget")
async def test_a_question_about_the_first_turn_is_answered_from_the_stored_summary(member, agents_llm):
    chat = await sync_to_async(seed)(member)
    agents_llm.add(SUMMARISER, text(SUMMARY))
    agents_llm.add("default", text("db-07, under CHG-4411."), text("It is fine."))

    assert (await ask(chat)).status == "completed"

    (summarising,) = agents_llm.seen[SUMMARISER]
    transcript = summarising.messages[-1]["content"]
    assert FIRST in transcript and FIRST_ANSWER in transcript and "Tool result:" in transcript
    sent = agents_llm.seen["default"][0].messages
    assert sent[1]["role"] == "system" and SUMMARY in sent[1]["content"]
    contents = [m.get("content") or "" for m in sent]
    assert FIRST not in contents and contents[-2] == QUESTION  # the reminder comes last
    assert "Turn 9: how is web-09 doing right now?" in contents  # recent turns verbatim
    stored = await HistorySummary.objects.aget(session_id=chat.pk)
    assert (stored.text, stored.model) == (SUMMARY, "fake-model") and stored.messages > 20
    assert await LLMCall.objects.filter(session_id=chat.pk, persona=SUMMARISER).aexists()

    assert (await ask(chat, "And web-09?")).status == "completed"
    assert len(agents_llm.seen[SUMMARISER]) == 1  # the stored summary is reused
    assert SUMMARY in agents_llm.seen["default"][1].messages[1]["content"]


@pytest.mark.usefixtures("budget")
async def test_when_the_model_fails_to_summarise_the_turns_own_words_stand_in(member, agents_llm):
    chat = await sync_to_async(seed)(member)
    agents_llm.add(SUMMARISER, error(500, "overloaded"))
    agents_llm.add("default", text("db-07."))

    assert (await ask(chat)).status == "completed"

    stored = await HistorySummary.objects.aget(session_id=chat.pk)
    assert stored.model == "" and FIRST in stored.text and "Answer: Noted: db-07" in stored.text
    assert FIRST in agents_llm.seen["default"][0].messages[1]["content"]
    row = await LLMCall.objects.aget(session_id=chat.pk, persona=SUMMARISER)
    assert row.error


async def test_offline_the_summary_is_the_earlier_questions_and_answers(member, settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, history_tokens=600)
    chat = await sync_to_async(seed)(member)
    await services.abegin_turn(chat.pk, QUESTION)

    messages = await history_for_turn(chat.pk, OfflineProvider(), "offline")

    assert FIRST in messages[0]["content"] and "<conversation-summary>" in messages[0]["content"]
    assert messages[-1] == {"role": "user", "content": QUESTION}
    assert sum(len(m.get("content") or "") for m in messages) < 600 * 4


async def test_under_the_budget_or_with_summaries_off_nothing_is_summarised(member, settings):
    chat = await sync_to_async(seed)(member, turns=2)
    await services.abegin_turn(chat.pk, QUESTION)
    whole = await history_for_turn(chat.pk, OfflineProvider(), "offline")
    assert whole[0]["content"] == FIRST and len(whole) == 9

    settings.CONFIG = dataclasses.replace(settings.CONFIG, history_tokens=0)
    long_chat = await sync_to_async(seed)(member, turns=20)
    await services.abegin_turn(long_chat.pk, QUESTION)
    window = await history_for_turn(long_chat.pk, OfflineProvider(), "offline")
    assert len(window) <= 50 and window[0]["role"] == "user"
    assert not await HistorySummary.objects.aexists()


def test_the_audit_page_shows_what_the_model_was_told_instead(member, auditor):
    chat = seed(member, turns=2)
    services.save_history_summary(chat.pk, through_seq=8, text=SUMMARY, messages=8, model="fake-model")
    client = Client()
    client.force_login(auditor)

    page = client.get(reverse("audit-session", args=[chat.pk])).content.decode()

    assert "Earlier turns summarised" in page and "CHG-4411" in page and "Through message #8" in page


def test_the_audit_export_keeps_the_summaries_beside_the_tree(member, auditor):
    chat = seed(member, turns=2)
    services.save_history_summary(chat.pk, through_seq=8, text=SUMMARY, messages=8, model="fake-model")
    client = Client()
    client.force_login(auditor)

    exported = client.get(reverse("api-audit-export", args=[chat.pk])).json()
    tree = client.get(reverse("api-audit-tree", args=[chat.pk])).json()

    assert exported["tree"]["id"] == chat.pk
    [summary] = exported["history_summaries"]
    assert (summary["through_seq"], summary["messages"], summary["model"]) == (8, 8, "fake-model")
    assert "CHG-4411" in summary["text"]
    assert tree["history_summaries"] == exported["history_summaries"]
