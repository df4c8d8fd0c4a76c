"""The offline model is honest about what it did not do (issue 15): asked for a change it says that
nothing was changed and why; it reads `web-1` as `web-01`; it answers in the user's language; an
HTTP status is not an incident number; its call ids never repeat within a session."""

from __future__ import annotations

import dataclasses
import json

import pytest
from django.utils import translation
from rest_framework.test import APIClient

from agents_app.llm.offline import detect_language, match_device, respond
from agents_app.personas import registry
from audit_app.models import AuditLog
from ops_app.models import Device
from tests.support.agents import persona
from tests.support.catalog import catalog_of


@pytest.fixture
def offline(settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, llm="offline", openai_api_key="")
    registry.reset()
    yield
    registry.reset()


def ask(user, *contents: str) -> list[dict]:
    client = APIClient()
    client.force_authenticate(user)
    session = client.post("/api/sessions/", {}, format="json").json()["id"]
    answers = []
    for content in contents:
        response = client.post(
            f"/api/sessions/{session}/messages/?wait=1", {"content": content}, format="json"
        )
        assert response.status_code == 200, response.content
        answers.append(response.json())
    return answers


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("inline_executor", "offline")
def test_a_requested_restart_is_refused_in_words_naming_the_real_device(org, member):
    Device.objects.create(organization=org, name="db-01", transport=Device.Transport.LOCAL)
    Device.objects.create(organization=org, name="web-01", transport=Device.Transport.LOCAL)
    (answer,) = ask(member, "restart nginx on web-1")
    assert answer["status"] == "completed"
    text = answer["answer"]
    assert text.startswith("**I did not restart nginx on web-01.**"), text
    assert "review gate" in text and "Nothing was changed." in text
    assert not AuditLog.objects.filter(tool__in=["host_restart_service"]).exists()
    # the worker looked web-1 up instead of failing on it
    hosts = AuditLog.objects.exclude(tool__in=["AgentTool", "query_devices"]).exclude(tool="")
    assert all('web-1"' not in json.dumps(row.arguments) for row in hosts)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("inline_executor", "offline")
def test_two_dispatches_in_one_session_get_different_call_ids(org, member):
    ask(member, "disk is full on web-01", "disk is full on db-01")
    dispatches = list(AuditLog.objects.filter(tool="AgentTool").order_by("pk"))
    assert len(dispatches) == 2
    assert dispatches[0].tool_call_id != dispatches[1].tool_call_id
    assert all(row.tool_call_id.startswith("offline_") for row in dispatches)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("why is the disk full on web-01?", "en"),
        ("¿por qué está lleno el disco en web-01?", "es"),
        ("el servidor web-01 devuelve errores", "es"),
        ("pourquoi le disque est plein sur web-01 ?", "fr"),
        ("le serveur renvoie des erreurs", "fr"),
        ("web-01", "en"),
        ("web-01 的磁盘为什么满了？", "zh-hans"),
        ("为什么 nginx 在 web-01 上返回 502", "zh-hans"),
        ("what does 磁盘 mean in the alert on web-01?", "en"),
    ],
)
def test_language_is_told_from_the_users_words(text, language):
    assert detect_language(text) == language


@pytest.mark.parametrize(
    ("asked", "known", "expected"),
    [
        ("web-1", ["db-01", "web-01"], "web-01"),
        ("WEB_01", ["web-01"], "web-01"),
        ("web01", ["web-01"], "web-01"),
        ("web-10", ["web-01", "web-1"], None),
        ("web-1", ["web-1", "web-01"], "web-1"),
    ],
)
def test_device_names_match_loosely_but_not_wrongly(asked, known, expected):
    assert match_device(asked, known) == expected


CATALOG = catalog_of([persona("specialist-disk", description="Disk space on hosts", when_to_use="disk full")])
AGENT_TOOL = {"type": "function", "function": {"name": "AgentTool", "parameters": {}}}


def coordinator_answer(question: str, report: str) -> str:
    """The coordinator's final answer once its specialist has reported `report`."""
    messages = [
        {"role": "system", "content": CATALOG},
        {"role": "user", "content": question},
        {"role": "assistant", "tool_calls": [{"id": "offline_1", "function": {"name": "AgentTool"}}]},
        {"role": "tool", "tool_call_id": "offline_1", "content": json.dumps({"result": report})},
    ]
    return respond(messages, [AGENT_TOOL]).text


def test_spanish_and_french_questions_get_spanish_and_french_phrases():
    spanish = coordinator_answer("¿por qué está lleno el disco en web-01?", "/var/log: 38G")
    assert spanish.startswith("Esto es lo que encontró el especialista:")
    assert "modelo sin conexión de Ongrid" in spanish and "Answer from" not in spanish
    french = coordinator_answer("pourquoi le disque est plein sur web-01 ?", "/var/log : 38G")
    assert french.startswith("Voici ce que le spécialiste a trouvé :")
    assert "modèle hors ligne d'Ongrid" in french
    refused = coordinator_answer("reinicia nginx en web-01 por favor", "nginx activo")
    assert refused.startswith("**No he hecho lo que pediste («reinicia nginx en web-01 por favor»).**")
    assert "No se ha cambiado nada." in refused
    plain = respond([{"role": "user", "content": "pourquoi le ciel est bleu ?"}], []).text
    assert plain.startswith("Vous avez demandé : « pourquoi le ciel est bleu ? »")


def test_chinese_questions_get_the_chinese_phrases():
    answer = coordinator_answer("web-01 的磁盘为什么满了？", "/var/log: 38G")
    assert answer.startswith("以下是专家智能体查到的情况：")
    assert "Ongrid 离线模型" in answer and "Answer from" not in answer
    assert "/var/log: 38G" in answer  # the specialist's own words are kept as they are
    plain = respond([{"role": "user", "content": "天空为什么是蓝色的？"}], []).text
    assert plain.startswith("你问的是：“天空为什么是蓝色的？”。我自己回答不了，因为这里我没有任何工具")


def test_the_phrases_follow_the_question_not_the_language_active_around_the_call():
    """A French interface (the active language) asking in English gets English phrases, and a
    Spanish specialist's label is not relayed twice."""
    spanish_label = (
        "(Respuesta del modelo sin conexión de Ongrid: un sustituto determinista, no un LLM real.)"
    )
    with translation.override("fr"):
        answer = coordinator_answer("why is the disk full on web-01?", f"/var/log: 38G {spanish_label}")
    assert answer.startswith("Here is what the specialist found:")
    assert "Respuesta del modelo" not in answer and "Réponse du modèle" not in answer


def test_a_question_about_a_stop_is_not_taken_for_a_request_to_stop():
    answer = coordinator_answer("why did nginx stop on web-01?", "OOM kill at 02:10")
    assert "I did not" not in answer and answer.startswith("Here is what the specialist found:")


INCIDENT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_incident_detail",
            "description": "One incident with its alerts and timeline.",
            "parameters": {
                "type": "object",
                "properties": {"incident_id": {"type": "integer"}},
                "required": ["incident_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "query_incidents",
            "description": "Incidents, newest first.",
            "parameters": {"type": "object", "properties": {"status": {"type": "string"}}},
        },
    },
]


@pytest.mark.parametrize(
    "question",
    [
        "the checkout returns 502 on every incident",
        "HTTP 500 incident on checkout",
        "incident: a 404 everywhere",
    ],
)
def test_an_http_status_is_not_read_as_an_incident_number(question):
    calls = respond([{"role": "user", "content": question}], INCIDENT_TOOLS).tool_calls
    assert [c.name for c in calls] == ["query_incidents"]
    assert all("502" not in c.arguments_raw and "500" not in c.arguments_raw for c in calls)


def test_an_incident_number_is_still_read_as_one():
    for question in ("incident 502 is open", "what about incident #42?"):
        calls = respond([{"role": "user", "content": question}], INCIDENT_TOOLS).tool_calls
        detail = [json.loads(c.arguments_raw) for c in calls if c.name == "get_incident_detail"]
        assert detail and detail[0]["incident_id"] in (502, 42)


def test_tool_call_ids_continue_past_the_sessions_history():
    history = [
        {"role": "system", "content": CATALOG},
        {"role": "user", "content": "disk full on web-01"},
        {"role": "assistant", "tool_calls": [{"id": "offline_1", "function": {"name": "AgentTool"}}]},
        {"role": "tool", "tool_call_id": "offline_1", "content": json.dumps({"result": "38G"})},
        {"role": "assistant", "content": "38G"},
        {"role": "user", "content": "disk full on db-01"},
    ]
    (call,) = respond(history, [AGENT_TOOL]).tool_calls
    assert call.id == "offline_2"
