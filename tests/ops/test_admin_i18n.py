"""The ops admin pages speak the browser's language (docs/i18n.md): action names and model help
texts are translated, while the English stays the default."""

from __future__ import annotations

import pytest

from ops_app.datasources import save_data_source
from ops_app.models import DataSource

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
