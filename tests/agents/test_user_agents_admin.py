"""User agents edited through the real admin pages change what the registry returns, in this
process at once and in another process at its next lookup (R4)."""

from __future__ import annotations

import dataclasses
import html
import json
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agents_app.models import UserAgent
from agents_app.personas import registry
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.django_subprocess import DjangoProcess

ROOT = Path(__file__).resolve().parents[2]
ADD_URL = "/admin/agents_app/useragent/add/"
LIST_URL = "/admin/agents_app/useragent/"


@pytest.fixture(autouse=True)
def fresh_registries():
    registry.reset()
    yield
    registry.reset()


@pytest.fixture
def admin_client(client, org_admin):
    client.force_login(org_admin)
    return client


def form_data(**overrides) -> dict:
    data = {
        "name": "specialist-postgres",
        "description": "PostgreSQL specialist",
        "when_to_use": "When the database is slow\n  - replication lag",
        "enabled": "on",
        "body": "You inspect PostgreSQL.",
        "tools": "query_promql\nhost_*",
        "disallowed_tools": "host_bash",
        "permission_mode": "read-only",
        "max_turns": "10",
        "max_tool_calls": "",
        "model": "",
        "critical_reminder": "",
        "skills": "promql-node-exporter",
        "extra": "{}",
    }
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not None}


def change_url(agent: UserAgent) -> str:
    return reverse("admin:agents_app_useragent_change", args=[agent.pk])


def errors_of(response) -> dict:
    form = response.context["adminform"].form
    return {field: list(errors) for field, errors in form.errors.items()}


@pytest.mark.django_db
def test_create_edit_disable_and_delete_through_the_admin(admin_client, org, org_admin):
    response = admin_client.post(ADD_URL, form_data())
    assert response.status_code == 302, errors_of(response)
    agent = UserAgent.objects.get(name="specialist-postgres")
    assert agent.organization == org and agent.created_by == org_admin
    persona = registry.get_registry(org.pk).by_name("specialist-postgres")
    assert persona.tools == ("query_promql", "host_*") and persona.disallowed_tools == ("host_bash",)
    assert persona.skills == ("promql-node-exporter",) and persona.source == "user"

    response = admin_client.post(change_url(agent), form_data(description="Postgres, edited"))
    assert response.status_code == 302, errors_of(response)
    assert registry.get_registry(org.pk).by_name("specialist-postgres").description == "Postgres, edited"

    response = admin_client.post(change_url(agent), form_data(enabled=None))  # checkbox cleared
    assert response.status_code == 302
    assert registry.get_registry(org.pk).by_name("specialist-postgres") is None

    admin_client.post(change_url(agent), form_data())
    assert registry.get_registry(org.pk).by_name("specialist-postgres") is not None
    delete_url = reverse("admin:agents_app_useragent_delete", args=[agent.pk])
    assert admin_client.post(delete_url, {"post": "yes"}).status_code == 302
    assert not UserAgent.objects.filter(pk=agent.pk).exists()
    assert registry.get_registry(org.pk).by_name("specialist-postgres") is None


@pytest.mark.django_db
def test_disable_action_and_bulk_delete_reach_the_registry(admin_client, org):
    for name in ("specialist-a", "specialist-b"):
        assert admin_client.post(ADD_URL, form_data(name=name)).status_code == 302
    ids = list(UserAgent.objects.values_list("pk", flat=True))
    admin_client.post(LIST_URL, {"action": "disable_agents", "_selected_action": ids[:1]})
    reg = registry.get_registry(org.pk)
    assert reg.by_name("specialist-a") is None and reg.by_name("specialist-b") is not None
    admin_client.post(LIST_URL, {"action": "delete_selected", "_selected_action": ids, "post": "yes"})
    assert UserAgent.objects.count() == 0
    assert registry.get_registry(org.pk).by_name("specialist-b") is None


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("overrides", "field", "fragment"),
    [
        ({"tools": "query_promql\nmake_coffee"}, "tools", "Unknown tool(s): make_coffee"),
        ({"tools": "hots_*"}, "tools", "Unknown tool(s): hots_*"),
        ({"disallowed_tools": "host_bsh"}, "disallowed_tools", "Unknown tool(s): host_bsh"),
        ({"name": "reviewer"}, "name", "'reviewer' is reserved"),
        ({"name": "Specialist PG"}, "name", "lowercase letters"),
        ({"permission_mode": "god-mode"}, "permission_mode", "Select a valid choice"),
        ({"max_turns": "0"}, "max_turns", "greater than or equal to 1"),
        ({"skills": "no-such-skill"}, "skills", "Unknown skill(s): no-such-skill"),
        ({"when_to_use": ""}, "when_to_use", "This field is required"),
    ],
)
def test_invalid_agents_are_refused_with_a_field_error(admin_client, org, overrides, field, fragment):
    response = admin_client.post(ADD_URL, form_data(**overrides))
    assert response.status_code == 200
    errors = errors_of(response)
    assert any(fragment in message for message in errors.get(field, [])), errors
    assert fragment in html.unescape(response.content.decode())  # shown on the page
    assert UserAgent.objects.count() == 0


@pytest.mark.django_db
def test_wildcard_blacklist_may_name_tools_that_do_not_exist_yet(admin_client):
    response = admin_client.post(ADD_URL, form_data(disallowed_tools="*_skill"))
    assert response.status_code == 302, errors_of(response)


@pytest.mark.django_db
def test_duplicate_names_are_refused_per_organization(admin_client, org, other_org):
    UserAgent.objects.create(
        organization=other_org, name="specialist-postgres", description="d", when_to_use="w"
    )
    assert admin_client.post(ADD_URL, form_data()).status_code == 302  # another tenant's name is free
    response = admin_client.post(ADD_URL, form_data())
    assert "already has an agent named 'specialist-postgres'" in " ".join(errors_of(response)["name"])
    assert UserAgent.objects.filter(organization=org).count() == 1


@pytest.mark.django_db
def test_only_org_admins_may_override_the_coordinator(client, org, org_admin):
    editor = create_user("eddie", "eddie-pass-123", org, roles.MEMBER, is_staff=True)
    editor.user_permissions.add(*Permission.objects.filter(content_type__app_label="agents_app"))
    client.force_login(editor)
    response = client.post(ADD_URL, form_data(name="default"))
    assert "only an org admin may override it" in " ".join(errors_of(response)["name"])
    assert not UserAgent.objects.exists()

    client.force_login(org_admin)
    response = client.post(ADD_URL, form_data(name="default", tools="", description="Acme coordinator"))
    assert response.status_code == 302, errors_of(response)
    coordinator = registry.get_registry(org.pk).by_name("default")
    assert coordinator.description == "Acme coordinator" and coordinator.tools is None


@pytest.mark.django_db
def test_org_admins_never_see_another_organizations_agents(admin_client, other_org):
    theirs = UserAgent.objects.create(
        organization=other_org, name="specialist-secret", description="Globex secret", when_to_use="w"
    )
    listing = admin_client.get(LIST_URL)
    assert listing.status_code == 200 and "specialist-secret" not in listing.content.decode()
    assert admin_client.get(change_url(theirs)).status_code == 302  # "does not exist" redirect
    markdown_url = reverse("admin:agents_app_useragent_markdown", args=[theirs.pk])
    assert admin_client.get(markdown_url).status_code == 404
    admin_client.post(change_url(theirs), form_data(name="specialist-secret", description="hijacked"))
    theirs.refresh_from_db()
    assert theirs.description == "Globex secret"


@pytest.mark.django_db
def test_members_and_auditors_have_no_admin_access(client, member, auditor):
    for user in (member, auditor):
        client.force_login(user)
        response = client.get(LIST_URL)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["personas/specialists/specialist-disk.md", "personas/default.md"])
def test_import_then_view_as_md_round_trips_a_file_exactly(admin_client, org, path):
    text = (ROOT / path).read_text(encoding="utf-8")
    upload = SimpleUploadedFile(Path(path).name, text.encode(), content_type="text/markdown")
    response = admin_client.post(reverse("admin:agents_app_useragent_import"), {"file": upload})
    assert response.status_code == 302
    agent = UserAgent.objects.get(organization=org)
    exported = admin_client.get(reverse("admin:agents_app_useragent_markdown", args=[agent.pk]))
    assert exported["Content-Type"].startswith("text/markdown")
    assert exported.content.decode() == text
    assert registry.get_registry(org.pk).by_name(agent.name).source == "user"


@pytest.mark.django_db
def test_import_of_a_hand_written_file_keeps_every_key(admin_client, org):
    text = (
        "---\nname: specialist-pg\ndescription: PG\nwhen_to_use: pg things\n"
        "tools: query_promql, host_*\nmax_tool_calls: 7\nteam: dba\n---\n\n# Hello\n"
    )
    response = admin_client.post(reverse("admin:agents_app_useragent_import"), {"text": text})
    assert response.status_code == 302
    agent = UserAgent.objects.get(name="specialist-pg")
    assert (
        agent.tools == ["query_promql", "host_*"]
        and agent.max_tool_calls == 7
        and agent.extra == {"team": "dba"}
    )
    again = admin_client.get(reverse("admin:agents_app_useragent_markdown", args=[agent.pk])).content.decode()
    assert "team: dba" in again and again.endswith("---\n\n# Hello\n")


@pytest.mark.django_db
def test_import_refuses_bad_files_and_existing_names_without_writing(admin_client, org):
    url = reverse("admin:agents_app_useragent_import")
    response = admin_client.post(url, {"text": "---\nname: x\ndescription: [\n---\n"})
    assert (
        response.status_code == 200
        and "invalid YAML in the front matter at line" in response.content.decode()
    )
    bad_tool = "---\nname: specialist-x\ndescription: d\nwhen_to_use: w\ntools: [rm_rf]\n---\n"
    response = admin_client.post(url, {"text": bad_tool})
    assert "Unknown tool(s): rm_rf" in response.content.decode()
    assert not UserAgent.objects.exists()
    good = bad_tool.replace("rm_rf", "query_promql")
    assert admin_client.post(url, {"text": good}).status_code == 302
    response = admin_client.post(url, {"text": good.replace("description: d", "description: e")})
    assert "already exists" in response.content.decode()
    assert UserAgent.objects.get().description == "d"
    response = admin_client.post(
        url, {"text": good.replace("description: d", "description: e"), "overwrite": "on"}
    )
    assert response.status_code == 302 and UserAgent.objects.get().description == "e"


@pytest.mark.django_db
def test_registry_warnings_are_shown_above_the_list(admin_client, tmp_path, monkeypatch):
    (tmp_path / "broken.md").write_text("no front matter here", encoding="utf-8")
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG, agents_dirs=[tmp_path]))
    registry.reset()
    page = admin_client.get(LIST_URL).content.decode()
    assert "Agent registry warnings (1)" in page
    assert f"{tmp_path / 'broken.md'}: no front matter" in page


LOOKUP_SCRIPT = """
import json
from agents_app.personas.registry import get_registry
organization = int(sys.argv[1])
print("ready", flush=True)
for line in sys.stdin:
    persona = get_registry(organization).by_name(line.strip())
    print(json.dumps(persona.description if persona else None), flush=True)
"""


@pytest.mark.django_db(transaction=True)
def test_a_second_process_sees_admin_edits_without_restart(admin_client, org, tmp_path):
    other = DjangoProcess(LOOKUP_SCRIPT, [str(org.pk)], tmp_path)
    try:
        assert other.readline() == "ready"
        assert json.loads(other.ask("specialist-postgres")) is None
        assert json.loads(other.ask("specialist-disk")).startswith("Disk specialist")

        assert admin_client.post(ADD_URL, form_data()).status_code == 302
        assert json.loads(other.ask("specialist-postgres")) == "PostgreSQL specialist"

        agent = UserAgent.objects.get(name="specialist-postgres")
        admin_client.post(change_url(agent), form_data(description="Edited in process one"))
        assert json.loads(other.ask("specialist-postgres")) == "Edited in process one"

        admin_client.post(change_url(agent), form_data(enabled=None))
        assert json.loads(other.ask("specialist-postgres")) is None

        admin_client.post(ADD_URL, form_data(name="specialist-disk", description="Acme disk override"))
        assert json.loads(other.ask("specialist-disk")) == "Acme disk override"
        override = UserAgent.objects.get(name="specialist-disk")
        admin_client.post(reverse("admin:agents_app_useragent_delete", args=[override.pk]), {"post": "yes"})
        assert json.loads(other.ask("specialist-disk")).startswith("Disk specialist")
    finally:
        other.close()


@pytest.mark.django_db
def test_platform_staff_choose_the_organization(client, org, other_org, django_user_model):
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(root)
    assert 'name="organization"' in client.get(ADD_URL).content.decode()
    response = client.post(ADD_URL, form_data(organization=str(other_org.pk)))
    assert response.status_code == 302, errors_of(response)
    assert UserAgent.objects.get().organization == other_org
    assert registry.get_registry(other_org.pk).by_name("specialist-postgres") is not None
    assert registry.get_registry(org.pk).by_name("specialist-postgres") is None
