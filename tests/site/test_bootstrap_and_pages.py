from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command

from ops_app.models import Organization

pytestmark = pytest.mark.django_db


def _bootstrap(settings, tmp_path) -> str:
    import dataclasses

    settings.CONFIG = dataclasses.replace(settings.CONFIG, data_dir=tmp_path)
    out = StringIO()
    call_command("ongrid_bootstrap", stdout=out)
    return out.getvalue()


def log_in(client, username: str, password: str) -> bool:
    """Through the login page, as a person would (the password check needs the request)."""
    response = client.post("/accounts/login/", {"username": username, "password": password})
    return response.status_code == 302 and "_auth_user_id" in client.session


def test_bootstrap_prints_credentials_that_log_in_and_is_idempotent(settings, tmp_path, client, monkeypatch):
    monkeypatch.delenv("ONGRID_ADMIN_PASSWORD", raising=False)
    first = _bootstrap(settings, tmp_path)
    second = _bootstrap(settings, tmp_path)
    user, password = re.search(r"as (\S+) / (\S+)", first).groups()
    assert re.search(r"as (\S+) / (\S+)", second).groups() == (user, password)
    assert Organization.objects.filter(name="Demo Shop").count() == 1
    assert log_in(client, user, password)
    assert (tmp_path / "admin-password").stat().st_mode & 0o077 == 0


def test_admin_password_from_environment_wins(settings, tmp_path, client, monkeypatch):
    monkeypatch.setenv("ONGRID_ADMIN_PASSWORD", "chosen-by-operator-9")
    output = _bootstrap(settings, tmp_path)
    assert "as admin / chosen-by-operator-9" in output
    assert log_in(client, "admin", "chosen-by-operator-9")


def test_login_page_renders_and_home_requires_login(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    page = client.get("/accounts/login/")
    assert page.status_code == 200
    assert b"Log in to Ongrid" in page.content


def test_home_opens_the_users_chat_with_organization_and_offline_banner(client, member):
    client.force_login(member)
    response = client.get("/", follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0].startswith("/chat/")
    assert "Acme Corp" in page
    assert "Offline model" in page


def test_static_files_are_served_by_the_application(client):
    response = client.get("/static/vendor/htmx-2.0.11.min.js")
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert b"htmx" in body
