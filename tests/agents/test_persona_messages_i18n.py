"""The persona validator speaks the user's language (docs/i18n.md): a Spanish, French or Chinese org
admin importing a persona with a mistake reads why in their language, in the admin and in the API."""

from __future__ import annotations

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from agents_app.models import UserAgent
from agents_app.personas import registry

pytestmark = pytest.mark.django_db

BAD_TOOL = "---\nname: specialist-x\ndescription: d\nwhen_to_use: w\ntools: [rm_rf]\n---\nBody.\n"
UNKNOWN_TOOL = {
    "es": "Herramientas desconocidas: rm_rf.",
    "fr": "Outils inconnus : rm_rf.",
    "zh-Hans": "未知工具：rm_rf。",
}
MISSING_KEY = {
    "es": "archivo subido: falta la clave obligatoria &#x27;description&#x27;",
    "fr": "fichier importé: clé obligatoire manquante : &#x27;description&#x27;",
    "zh-Hans": "上传的文件: 缺少必填键 &#x27;description&#x27;",
}
BAD_NAME = {
    "es": "Usa minúsculas, dígitos y guiones simples",
    "fr": "Utilisez des minuscules, des chiffres et des tirets simples",
    "zh-Hans": "只能使用小写字母、数字和单个连字符",
}


@pytest.fixture(autouse=True)
def fresh_registries():
    registry.reset()
    yield
    registry.reset()


@pytest.mark.parametrize("language", ["es", "fr", "zh-Hans"])
def test_importing_a_bad_persona_in_the_admin_explains_why_in_the_browsers_language(
    client, org_admin, language
):
    client.force_login(org_admin)
    url = reverse("admin:agents_app_useragent_import")
    page = client.post(url, {"text": BAD_TOOL}, HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert UNKNOWN_TOOL[language] in page and "Unknown tool(s)" not in page
    no_description = BAD_TOOL.replace("description: d\n", "")  # when_to_use alone falls back to it
    page = client.post(url, {"text": no_description}, HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert MISSING_KEY[language] in page and "missing required key" not in page
    assert not UserAgent.objects.exists()


@pytest.mark.parametrize("language", ["es", "fr", "zh-Hans"])
def test_the_agents_api_refuses_a_bad_name_in_the_callers_language(org_admin, language):
    client = APIClient()
    client.force_authenticate(org_admin)
    payload = {"name": "Bad Name", "description": "d", "when_to_use": "w", "body": "b"}
    response = client.post("/api/agents/custom/", payload, format="json", HTTP_ACCEPT_LANGUAGE=language)
    assert response.status_code == 400
    assert BAD_NAME[language] in str(response.json())


def test_english_messages_are_unchanged_without_a_language(client, org_admin):
    client.force_login(org_admin)
    page = client.post(reverse("admin:agents_app_useragent_import"), {"text": BAD_TOOL}).content.decode()
    assert "Unknown tool(s): rm_rf. Known tools:" in page


ADMIN_LABELS = {
    "es": [
        "Herramientas y permisos",
        "Una línea: para qué sirve este agente.",
        "Herramientas que este agente nunca recibe",
    ],
    "fr": ["Outils et permissions", "Une ligne : à quoi sert cet agent.", "Outils jamais donnés à cet agent"],
    "zh-Hans": ["工具与权限", "一句话说明该智能体的用途。", "永远不提供给该智能体的工具"],
}
IMPORT_LABELS = {
    "es": ["Importar un archivo de persona", "Reemplazar un agente existente con el mismo nombre"],
    "fr": ["Importer un fichier de persona", "Remplacer un agent existant du même nom"],
    "zh-Hans": ["导入 persona 文件", "替换同名的已有智能体"],
}


@pytest.mark.parametrize("language", ["es", "fr", "zh-Hans"])
def test_the_agent_admin_pages_label_their_fields_in_the_browsers_language(client, org_admin, language):
    client.force_login(org_admin)
    page = client.get("/admin/agents_app/useragent/add/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    for text in ADMIN_LABELS[language]:
        assert text in page
    assert "Tools and permissions" not in page and "One line: what this agent is for." not in page
    url = reverse("admin:agents_app_useragent_import")
    page = client.get(url, HTTP_ACCEPT_LANGUAGE=language).content.decode()
    for text in IMPORT_LABELS[language]:
        assert text in page
