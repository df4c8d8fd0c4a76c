"""The words Ongrid writes in an IM app's thread follow the thread's language (docs/i18n.md, "IM
threads"): the app's reply language, else the linked sender's own setting, else English; channel
posts without a sender (investigation summaries, schedule copies) follow the app's reply language.
What the agents wrote stays as written. Everything is read from what the fake platforms recorded."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.utils import translation

from fakes.openai_server import call, text, tool_calls
from fakes.telegram_api import FakeTelegram
from im_app import background
from im_app.summaries import post_summaries
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.im import link, post_telegram, telegram_app, tg_button, tg_message, until

pytestmark = pytest.mark.usefixtures("fresh_registry")
CHAT = 555
ALICE = 42
ANSWER = "Disk **db-1** is at 91% on `/var`."


@pytest.fixture
def telegram():
    fake = FakeTelegram().start()
    yield fake
    fake.stop()


def set_language(user, language: str) -> None:
    user.membership.language = language
    user.membership.save(update_fields=["language"])


def first_text(telegram: FakeTelegram) -> str:
    return telegram.called("sendMessage")[0].body["text"]


# ---- the choice -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_app_wins_then_the_linked_sender_then_english(org, member, telegram):
    from im_app.languages import thread_language

    spanish = telegram_app(org, telegram, reply_language="ES")
    plain = telegram_app(org, telegram, name="Plain bot", webhook_path="plain")
    set_language(member, "zh-hans")

    assert thread_language(spanish, member) == "es"  # normalised, and the app's choice wins
    assert thread_language(plain, member) == "zh-hans"
    assert thread_language(plain, None) == "en"
    set_language(member, "")
    assert thread_language(plain, member) == "en"


# ---- threads ------------------------------------------------------------------------------------

threads = pytest.mark.usefixtures("close_async_db_connections", "inline_executor")


@threads
@pytest.mark.django_db(transaction=True)
async def test_an_app_with_a_reply_language_writes_its_placeholder_button_and_links_in_it(
    org, member, telegram, agents_llm
):
    app = await sync_to_async(telegram_app)(org, telegram, reply_language="es")
    await sync_to_async(link)(app, ALICE, member)
    agents_llm.add("default", text(ANSWER))

    await post_telegram(app, tg_message(1, "¿Por qué está lleno el disco de db-1?"))

    placeholder = telegram.called("sendMessage")[0].body
    assert placeholder["text"] == "Lo estoy investigando…"
    [[stop]] = placeholder["reply_markup"]["inline_keyboard"]
    assert stop["text"] == "Detener"
    final = telegram.messages[min(telegram.messages)]["text"]
    assert final.startswith("Disk <b>db-1</b> is at 91% on <code>/var</code>.")  # the agent's words
    assert ">Transcripción</a> · " in final and ">Auditoría</a>" in final
    assert "Transcript<" not in final
    assert translation.get_language() == "en"  # the thread's language did not leak out


@threads
@pytest.mark.django_db(transaction=True)
async def test_without_an_app_language_the_linked_senders_own_language_is_used(
    org, member, telegram, agents_llm
):
    app = await sync_to_async(telegram_app)(org, telegram)
    await sync_to_async(link)(app, ALICE, member)
    await sync_to_async(set_language)(member, "fr")
    agents_llm.add("default", text(ANSWER))

    await post_telegram(app, tg_message(1, "Pourquoi le disque de db-1 est-il plein ?"))

    assert first_text(telegram) == "J’examine ça…"
    final = telegram.messages[min(telegram.messages)]["text"]
    assert ">Transcription</a>" in final and ">Audit</a>" in final


@threads
@pytest.mark.django_db(transaction=True)
async def test_two_threads_answered_at_once_each_keep_their_language(org, member, telegram, agents_llm):
    spanish = await sync_to_async(telegram_app)(org, telegram, reply_language="es")
    chinese = await sync_to_async(telegram_app)(
        org, telegram, name="Chinese bot", webhook_path="zh", reply_language="zh-hans"
    )
    await sync_to_async(link)(spanish, ALICE, member)
    await sync_to_async(link)(chinese, 43, member)
    agents_llm.add("default", text("uno " * 60, chunk_size=4, chunk_delay=0.01))
    agents_llm.add("default", text("二 " * 60, chunk_size=4, chunk_delay=0.01))

    await post_telegram(spanish, tg_message(1, "hola", chat_id=1), wait=False)
    await post_telegram(chinese, tg_message(2, "你好", chat_id=2, user_id=43), wait=False)
    await background.drain()

    by_chat = {call.body["chat_id"]: call.body["text"] for call in telegram.called("sendMessage")}
    assert by_chat == {1: "Lo estoy investigando…", 2: "正在排查…"}
    finals = {m["chat_id"]: m["text"] for m in telegram.messages.values()}
    assert ">Transcripción</a>" in finals[1] and ">对话记录</a>" in finals[2]


@threads
@pytest.mark.django_db(transaction=True)
async def test_an_unlinked_sender_is_asked_to_link_in_the_apps_language(org, member, telegram, agents_llm):
    app = await sync_to_async(telegram_app)(org, telegram, reply_language="es")

    await post_telegram(app, tg_message(1, "¿Está bien checkout?", user_id=99))

    [reply] = telegram.bot_texts(CHAT)
    assert reply.startswith("¡Hola! Todavía no sé quién eres en Ongrid. Vincula tu cuenta")
    assert "http://127.0.0.1:8000/im/link/" in reply and agents_llm.seen == {}


@threads
@pytest.mark.django_db(transaction=True)
async def test_new_is_answered_in_the_thread_language(org, member, telegram, agents_llm):
    app = await sync_to_async(telegram_app)(org, telegram, reply_language="zh-hans")
    await sync_to_async(link)(app, ALICE, member)

    await post_telegram(app, tg_message(1, "/new"))

    assert telegram.bot_texts(CHAT) == ["已开始新的对话。要我排查什么？"]


APPROVE = "Decision: approve\nSOP: pass — RB-12 covers acknowledging\nConcurrent work: pass\nRollback: pass"


@threads
@pytest.mark.django_db(transaction=True)
async def test_an_approval_card_its_buttons_and_their_answers_are_in_the_apps_language(
    org, member, telegram, agents_llm, settings
):
    import dataclasses

    from ops_app.models import Incident
    from tests.support.gate import DUAL, ack_arguments, make_incident, make_user_agent

    settings.CONFIG = dataclasses.replace(settings.CONFIG, approval_timeout=30.0)
    await sync_to_async(make_user_agent)(
        org, DUAL, "dual-sign-required", ["acknowledge_incident", "query_incidents"]
    )
    incident = await sync_to_async(make_incident)(org)
    app = await sync_to_async(telegram_app)(org, telegram, reply_language="fr")
    await sync_to_async(link)(app, ALICE, member)
    carol = await sync_to_async(create_user)("carol", "carol-pass-123", org, roles.MEMBER)
    await sync_to_async(set_language)(carol, "es")  # the app's language wins over hers
    await sync_to_async(link)(app, 77, carol)
    brief = {"description": "Ack payments", "subagent_type": DUAL, "prompt": "Ack the incident."}
    agents_llm.add("default", tool_calls(call("AgentTool", brief, id="dispatch")), text("Acquitté."))
    agents_llm.add(
        DUAL, tool_calls(call("acknowledge_incident", ack_arguments(incident), id="ack")), text("Done.")
    )
    agents_llm.add("reviewer", text(APPROVE))

    await post_telegram(app, tg_message(1, "Acquitte l'incident des paiements"), wait=False)
    card_id = await until(
        lambda: next((i for i, m in list(telegram.messages.items()) if "Approbation" in m["text"]), None),
        what="the card",
    )
    card = telegram.messages[card_id]
    approve, reject = card["reply_markup"]["inline_keyboard"][0]
    assert (approve["text"], reject["text"]) == ("Approuver", "Rejeter")
    assert card["text"].startswith("<b>Approbation requise</b>\nAction : acknowledge")
    assert "Relecteur : Approuvé — " in card["text"]
    assert "En attente de l’approbation du propriétaire de la discussion" in card["text"]

    await post_telegram(
        app, tg_button(2, approve["callback_data"], user_id=77, chat_id=CHAT, message_id=card_id), wait=False
    )
    refused = await until(lambda: telegram.callback_answers, what="an answer to carol")
    assert refused[0]["text"].startswith("Seul le propriétaire de la discussion")
    await post_telegram(
        app,
        tg_button(3, approve["callback_data"], user_id=ALICE, chat_id=CHAT, message_id=card_id),
        wait=False,
    )
    await until(lambda: len(telegram.callback_answers) == 2, what="an answer to alice")
    await background.drain()

    assert telegram.callback_answers[1]["text"] == "Approuvé."
    assert (await Incident.objects.aget(pk=incident.pk)).status == "acknowledged"
    decided = telegram.messages[card_id]["text"]
    assert decided.startswith("<b>Modification tranchée</b>") and "Approuvé par alice : " in decided


# ---- channel posts without a sender -------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_investigation_summary_is_posted_in_each_apps_language(org, member, telegram):
    telegram_app(org, telegram, reply_language="es", summary_channel="-100")
    telegram_app(org, telegram, name="Plain bot", webhook_path="plain", summary_channel="-200")
    set_language(member, "fr")  # a person's setting has no say in a channel post
    summary = {
        "incident": {"id": 7, "title": "Disk full on db-01", "severity": "critical", "path": "/incidents/7/"},
        "status": "done",
        "summary": "The WAL filled /var.",
        "root_cause": "db-01 archive_command failing",
        "confidence_word": "high",
    }

    post_summaries(sender=None, organization_id=org.pk, summary=summary)  # the signal's receiver

    posts = {call.body["chat_id"]: call.body["text"] for call in telegram.called("sendMessage")}
    spanish, english = posts["-100"], posts["-200"]
    assert spanish.startswith("<b>Investigación terminada: Disk full on db-01</b> (critical)")
    assert "\nThe WAL filled /var.\n" in spanish  # the agent's words stay as written
    assert "Causa raíz: db-01 archive_command failing" in spanish and "Confianza: alta" in spanish
    assert '<a href="http://127.0.0.1:8000/incidents/7/">Incidente</a>' in spanish
    assert (
        english.startswith("<b>Investigation done: Disk full on db-01</b>") and "Confidence: high" in english
    )
    assert ">Incident</a>" in english


def test_a_schedules_copy_is_posted_in_the_apps_language(org, agents_llm, telegram, transactional_db):
    from schedules_app import runner, scheduler
    from schedules_app.models import ScheduleRun
    from tests.support.schedules import make_schedule

    telegram_app(org, telegram, reply_language="es", summary_channel="-100")
    telegram_app(org, telegram, name="Plain bot", webhook_path="plain", summary_channel="-200")
    schedule = make_schedule(org, deliver_to_im=True, open_incidents=False)
    finding = {
        "status": "problem",
        "summary": "db-01 /var is nearly full.",
        "findings": [
            {"title": "/var over 85 %", "severity": "problem", "target": "db-01", "evidence": "91%"}
        ],
    }
    agents_llm.add("specialist-disk", tool_calls(call("submit_finding", finding)), text("Reported."))

    run = scheduler.create_manual_run(schedule)
    runner.execute_run(run.pk)

    run = ScheduleRun.objects.get(pk=run.pk)
    assert run.deliveries["im"] == "posted to 2 channel(s)"  # the run keeps its outcome in English
    posts = {call.body["chat_id"]: call.body["text"] for call in telegram.called("sendMessage")}
    spanish, english = posts["-100"], posts["-200"]
    with translation.override("es"):
        problem = str(ScheduleRun.Finding("problem").label).upper()
    assert problem != "PROBLEM" and f"<b>disk check: {problem}</b>" in spanish
    assert "Estado: " in spanish and "db-01 /var is nearly full." in spanish
    assert f'/schedules/runs/{run.pk}/">Ejecución</a>' in spanish
    assert "<b>disk check: PROBLEM</b>" in english and f'/schedules/runs/{run.pk}/">Run</a>' in english


@threads
@pytest.mark.django_db(transaction=True)
async def test_slacks_new_command_answers_and_opens_its_thread_in_the_typists_language(
    org, member, agents_llm
):
    from urllib.parse import urlencode

    from fakes.slack_api import FakeSlack
    from tests.support.im import post_slack, slack_app

    slack = FakeSlack().start()
    try:
        app = await sync_to_async(slack_app)(org, slack)
        spanish = await sync_to_async(slack_app)(org, slack, name="Spanish bot", reply_language="es")
        await sync_to_async(link)(app, "U42", member)
        await sync_to_async(set_language)(member, "fr")
        agents_llm.add("default", text("Rien de neuf."))
        form = "application/x-www-form-urlencoded"

        def command(trigger: str, user: str) -> bytes:
            fields = {"command": "/new", "text": "quoi de neuf ?", "user_id": user, "channel_id": "C1"}
            return urlencode({**fields, "trigger_id": trigger}).encode()

        answer = await post_slack(app, "commands", command("T1", "U42"), content_type=form)
        unlinked = await post_slack(spanish, "commands", command("T2", "U99"), content_type=form)

        assert answer.json()["text"] == "Ouverture d’une nouvelle conversation…"
        [opener] = [c for c in slack.called("chat.postMessage") if "thread_ts" not in c.body]
        assert opener.body["text"] == "Nouvelle conversation avec <@U42> : quoi de neuf ?"
        assert unlinked.json()["text"] == "Empezando una conversación nueva…"
        [link_reply] = slack.ephemeral
        assert link_reply["user"] == "U99"
        assert link_reply["text"].startswith("Vincula tu cuenta de Ongrid una sola vez")
    finally:
        slack.stop()


@threads
@pytest.mark.django_db(transaction=True)
async def test_the_stop_button_its_answer_and_the_stop_line_are_in_the_apps_language(
    org, member, telegram, agents_llm
):
    app = await sync_to_async(telegram_app)(org, telegram, reply_language="es")
    await sync_to_async(link)(app, ALICE, member)
    agents_llm.add("default", text("still thinking " * 200, chunk_size=3, chunk_delay=0.02))

    await post_telegram(app, tg_message(1, "Revisa todos los hosts"), wait=False)
    message_id = await until(lambda: min(telegram.messages) if telegram.messages else None)
    [[stop]] = telegram.messages[message_id]["reply_markup"]["inline_keyboard"]
    await until(lambda: telegram.messages[message_id]["edits"], what="the stream under way")
    await post_telegram(
        app, tg_button(2, stop["callback_data"], user_id=ALICE, chat_id=CHAT, message_id=message_id)
    )

    assert stop["text"] == "Detener" and telegram.callback_answers[0]["text"] == "Deteniendo…"
    final = telegram.messages[message_id]["text"]
    assert "⏹ Detenido por alice antes de completar la respuesta" in final, final
    assert "Stopped by" not in final


@threads
@pytest.mark.django_db(transaction=True)
async def test_a_second_message_while_a_turn_runs_is_told_so_in_the_apps_language(
    org, member, telegram, agents_llm
):
    app = await sync_to_async(telegram_app)(org, telegram, reply_language="fr")
    await sync_to_async(link)(app, ALICE, member)
    agents_llm.add("default", text("encore " * 60, chunk_size=4, chunk_delay=0.02))

    await post_telegram(app, tg_message(1, "Vérifie tous les hôtes"), wait=False)
    first = await until(lambda: min(telegram.messages) if telegram.messages else None)
    await until(lambda: telegram.messages[first]["edits"], what="the first turn under way")
    await post_telegram(app, tg_message(2, "Et la base ?"), wait=False)
    # The turn is refused before anything is posted: the notice is a message of its own.
    second = await until(
        lambda: next((i for i in list(telegram.messages) if i != first), None),
        what="the second message answered",
    )
    await background.drain()

    assert telegram.messages[second]["text"] == (
        "Une réponse est déjà en cours de rédaction dans ce fil ; attendez-la ou appuyez sur Arrêter."
    )
    assert telegram.messages[first]["text"].startswith("encore encore")
