"""The ops admin pages speak the browser's language (docs/i18n.md): action names and model help
texts are translated, while the English stays the default."""

from __future__ import annotations

import pytest

from ops_app.integrations.datasources import save_data_source
from ops_app.models import DataSource
from tests.support.schedules import make_schedule

pytestmark = pytest.mark.django_db

PAGES = {
    "es": ["Probar la conexión", "Cómo la nombran los agentes"],
    "fr": ["Tester la connexion", "Le nom que lui donnent les agents"],
    "zh-Hans": ["测试连接", "智能体引用它的名称"],
}


@pytest.mark.parametrize("language", ["es", "fr", "zh-Hans"])
def test_data_source_admin_actions_and_help_texts_are_translated(client, org, org_admin, language):
    save_data_source(DataSource(organization=org, kind="prometheus", name="prod", url="http://prom:9090"))
    client.force_login(org_admin)
    listing = client.get("/admin/ops_app/datasource/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert PAGES[language][0] in listing and "Test connection" not in listing
    form = client.get("/admin/ops_app/datasource/add/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert PAGES[language][1] in form and "How agents name it" not in form


def test_english_admin_is_unchanged(client, org_admin):
    client.force_login(org_admin)
    form = client.get("/admin/ops_app/datasource/add/").content.decode()
    assert "How agents name it (the tools' `datasource` argument), e.g. prod-eu." in form


ADMIN_WORDS = {
    # model name (the change list's heading and the index), field labels, a choice, an action
    "es": ["Equipos", "Puerto SSH", "Política de clave del host SSH", "Máquina virtual", "Ejecutar ahora"],
    "fr": [
        "Équipements",
        "Port SSH",
        "Politique de clé d’hôte SSH",
        "Machine virtuelle",
        "Lancer maintenant",
    ],
    "zh-Hans": ["设备", "SSH 端口", "SSH 主机密钥策略", "虚拟机", "立即运行"],
}


@pytest.mark.parametrize("language", ["es", "fr", "zh-Hans"])
def test_admin_model_names_field_labels_choices_and_actions_follow_the_browser(
    client, org, org_admin, language
):
    make_schedule(org, "disk check")  # the actions menu shows once there is a row
    client.force_login(org_admin)
    model_name, port, policy, vm, run_now = ADMIN_WORDS[language]
    index = client.get("/admin/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert model_name in index and ">Devices<" not in index
    form = client.get("/admin/ops_app/device/add/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert port in form and policy in form and vm in form
    assert "Ssh port" not in form and "SSH port" not in form and "Virtual machine" not in form
    schedules = client.get("/admin/schedules_app/schedule/", HTTP_ACCEPT_LANGUAGE=language).content.decode()
    assert run_now in schedules and ">Run now<" not in schedules


def test_the_users_own_language_wins_over_the_browser_in_the_admin(client, org_admin):
    org_admin.membership.language = "fr"
    org_admin.membership.save(update_fields=["language"])
    client.force_login(org_admin)
    form = client.get("/admin/ops_app/datasource/add/", HTTP_ACCEPT_LANGUAGE="es").content.decode()
    assert "Vérifier TLS" in form and "Certificats d’AC" in form and "Verificar TLS" not in form


def test_english_field_labels_and_model_names(client, org_admin):
    client.force_login(org_admin)
    form = client.get("/admin/ops_app/device/add/").content.decode()
    assert "SSH port" in form and "SSH host-key policy" in form
    index = client.get("/admin/").content.decode()
    assert "Data sources" in index and "LLM endpoints" in index
