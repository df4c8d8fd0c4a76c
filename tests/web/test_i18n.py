"""The interface in Spanish, French and Simplified Chinese (docs/i18n.md): the browser's language,
the user's own setting over it, the header's switch, the JavaScript catalog, API errors, and local
times for a user in Mexico City."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from chat_app import services
from chat_app.models import ChatSession
from ops_app.models import Incident, Membership

pytestmark = pytest.mark.django_db

AT = datetime(2026, 12, 1, 0, 26, 26, tzinfo=UTC)  # 2026-11-30 18:26:26 in Mexico City (UTC-6)

LOGIN = {
    "es": ["Inicia sesión en Ongrid", "Contraseña", ">Entrar<"],
    "fr": ["Connexion à Ongrid", "Mot de passe", ">Se connecter<"],
    "zh-Hans": ["登录 Ongrid", "密码", ">登录<"],
}
CHAT = {
    "es": [">Incidentes<", ">Cerrar sesión<", ">Enviar<", "+ Nuevo chat", 'placeholder="Buscar chats"'],
    "fr": [">Incidents<", ">Se déconnecter<", ">Envoyer<", "+ Nouvelle discussion", "Rechercher dans les"],
    "zh-Hans": [">事件<", ">退出登录<", ">发送<", "+ 新对话", 'placeholder="搜索对话"'],
}
AUDIT = {
    "es": ["Auditoría: sesiones", ">Filtrar<", "<th>Sesión</th>", "Ninguna sesión cumple estos filtros."],
    "fr": ["Audit : sessions", ">Filtrer<", "<th>Session</th>", "Aucune session ne correspond"],
    "zh-Hans": ["审计：会话", ">筛选<", "<th>会话</th>", "没有符合这些筛选条件的会话。"],
}


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("language", ["es", "fr", "zh-Hans"])
def test_the_login_page_and_its_error_follow_the_browser(language):
    page = Client().get("/accounts/login/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    for text in LOGIN[language]:
        assert text in page
    assert "Log in to Ongrid" not in page
    failed = Client().post(
        "/accounts/login/", {"username": "nobody", "password": "wrong"}, HTTP_ACCEPT_LANGUAGE=language
    )
    error = {"es": "no coinciden", "fr": "incorrect", "zh-Hans": "用户名和密码不匹配"}[language]
    assert error in failed.content.decode()


@pytest.mark.parametrize("language", ["es", "fr", "zh-Hans"])
def test_chat_and_audit_pages_are_translated(language, member, auditor):
    chat = services.start_chat(member)
    page = login(member).get(f"/chat/{chat.pk}/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    for text in CHAT[language]:
        assert text in page
    audit = login(auditor).get("/audit/?persona=nobody", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    for text in AUDIT[language]:
        assert text in audit


def test_english_stays_the_default():
    page = Client().get("/accounts/login/").content.decode()
    assert "Log in to Ongrid" in page and '<html lang="en">' in page


def test_api_errors_and_the_javascript_catalog_are_translated(member):
    client = login(member)
    missing = client.get("/api/no-such-thing/", HTTP_ACCEPT_LANGUAGE="fr")
    assert missing.status_code == 404
    assert missing.json()["error"] == "aucun point d’accès de l’API à /api/no-such-thing/"
    catalog = Client().get("/jsi18n/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert '"Copiado"' in catalog and "Reconectando" in catalog


def test_the_header_switch_is_saved_and_wins_over_the_browser(member):
    client = login(member)
    switched = client.post("/i18n/setlang/", {"language": "fr", "next": "/preferences/"})
    assert switched.status_code == 302 and switched["Location"] == "/preferences/"
    assert Membership.objects.get(user=member).language == "fr"
    # Another browser (no cookie), asking for Spanish: the saved setting still wins.
    page = login(member).get("/preferences/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert "Préférences" in page and '<html lang="fr">' in page
    assert '<option value="fr" lang="fr" selected>' in page  # the switch shows the saved choice


def test_preferences_set_and_clear_the_language(member):
    client = login(member)
    assert client.post("/preferences/", {"language": "xx", "timezone": ""}).status_code == 200
    assert Membership.objects.get(user=member).language == ""
    saved = client.post("/preferences/", {"language": "zh-hans", "timezone": ""}, follow=True)
    assert Membership.objects.get(user=member).language == "zh-hans"
    assert '<html lang="zh-hans">' in saved.content.decode() and "偏好设置" in saved.content.decode()
    client.post("/preferences/", {"language": "", "timezone": ""})
    assert Membership.objects.get(user=member).language == ""
    page = login(member).get("/preferences/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert "Preferencias" in page  # back to following the browser


def test_a_user_in_mexico_city_sees_local_times_in_chat_audit_and_admin(member, auditor, org_admin, org):
    Membership.objects.filter(user__in=[member, auditor, org_admin]).update(
        timezone="America/Mexico_City", language="es"
    )
    chat = services.start_chat(member, title="disco de web-01")
    ChatSession.objects.filter(pk=chat.pk).update(updated_at=AT, created_at=AT)
    page = login(member).get(f"/chat/{chat.pk}/").content.decode()
    assert "2026-11-30 18:26:26 America/Mexico_City" in page and "Nuevo chat" in page
    audit = login(auditor).get(f"/audit/sessions/{chat.pk}/").content.decode()
    assert "2026-11-30 18:26:26" in audit and "2026-12-01 00:26" not in audit
    Incident.objects.create(organization=org, title="disco lleno", started_at=AT)
    admin = login(org_admin).get("/admin/ops_app/incident/").content.decode()
    # Dates are written the Spanish way (docs/i18n.md), in the viewer's zone.
    assert "30 nov. 2026 18:26" in admin and "1 dic. 2026" not in admin


def test_our_serializers_validation_errors_are_translated(org_admin, auditor):
    client = login(org_admin)
    empty = client.post("/api/knowledge/", {}, content_type="application/json", HTTP_ACCEPT_LANGUAGE="es")
    assert empty.status_code == 400
    assert empty.json()["error"] == "envía un `file`, o `content` con un `filename`"
    refused = login(org_admin.__class__.objects.create_user("nobody")).post(
        "/api/knowledge/", {"content": "x"}, content_type="application/json", HTTP_ACCEPT_LANGUAGE="fr"
    )
    assert refused.json()["detail"] == "vous n’appartenez à aucune organisation"
    cursor = login(auditor).get("/api/audit/sessions/?cursor=zz", HTTP_ACCEPT_LANGUAGE="zh-Hans")
    assert cursor.status_code == 400 and "游标 'zz' 无效" in cursor.content.decode()
