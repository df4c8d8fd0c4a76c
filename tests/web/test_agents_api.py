"""The agents API: the catalog any member's coordinator sees, and custom agents for org admins
only, scoped to the caller's organization."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from agents_app.models import UserAgent
from agents_app.personas import registry
from agents_app.personas.catalog import HEADER

pytestmark = pytest.mark.django_db
CUSTOM = "/api/agents/custom/"


@pytest.fixture(autouse=True)
def fresh_registries():
    registry.reset()
    yield
    registry.reset()


def client_for(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def payload(**overrides) -> dict:
    data = {
        "name": "specialist-postgres",
        "description": "PostgreSQL specialist",
        "when_to_use": "When the database is slow\n- locks",
        "tools": ["query_promql", "host_*"],
        "body": "You inspect PostgreSQL.",
    }
    data.update(overrides)
    return data


def agent_of(org, name="specialist-postgres", **fields) -> UserAgent:
    return UserAgent.objects.create(
        organization=org, name=name, description=fields.pop("description", "d"), when_to_use="w", **fields
    )


def test_catalog_shows_builtin_specialists_and_own_user_agents_only(member, org, other_org):
    agent_of(org, "specialist-mine", description="Mine")
    agent_of(other_org, "specialist-theirs", description="Theirs")
    response = client_for(member).get("/api/agents/")
    assert response.status_code == 200
    body = response.json()
    names = [agent["name"] for agent in body["agents"]]
    assert names == sorted(names)
    assert {"incident-investigator", "specialist-disk", "specialist-mine"} <= set(names)
    assert "specialist-theirs" not in names and "default" not in names and "reviewer" not in names
    assert body["catalog"].startswith(HEADER) and "**specialist-mine** — Mine" in body["catalog"]
    mine = next(agent for agent in body["agents"] if agent["name"] == "specialist-mine")
    assert mine["source"] == "user" and mine["when_to_use"] == "w"


def test_catalog_needs_a_login(client):
    assert client.get("/api/agents/").status_code in (401, 403)


@pytest.mark.parametrize("role", ["member", "auditor", "outsider"])
def test_custom_agents_are_for_org_admins_only(request, role, org):
    agent = agent_of(org)
    client = client_for(request.getfixturevalue(role))
    assert client.get(CUSTOM).status_code == 403
    assert client.post(CUSTOM, payload(name="specialist-x"), format="json").status_code == 403
    assert client.patch(f"{CUSTOM}{agent.pk}/", {"description": "x"}, format="json").status_code == 403
    assert client.delete(f"{CUSTOM}{agent.pk}/").status_code == 403
    assert UserAgent.objects.get().description == "d"


def test_anonymous_cannot_reach_custom_agents():
    assert client_for(None).get(CUSTOM).status_code in (401, 403)


def test_org_admin_lists_creates_patches_and_deletes_own_agents(org_admin, org, other_org):
    agent_of(other_org, "specialist-theirs")
    client = client_for(org_admin)
    created = client.post(CUSTOM, payload(), format="json")
    assert created.status_code == 201, created.json()
    row = UserAgent.objects.get(name="specialist-postgres")
    assert row.organization == org and row.created_by == org_admin
    assert created.json()["markdown"].startswith("---\nname: specialist-postgres\n")
    created_persona = registry.get_registry(org.pk).by_name("specialist-postgres")
    assert created_persona.tools == ("query_promql", "host_*") and created_persona.max_turns == 15

    listing = client.get(CUSTOM).json()
    assert [item["name"] for item in listing["results"]] == ["specialist-postgres"]

    patched = client.patch(
        f"{CUSTOM}{row.pk}/", {"description": "Patched", "tools": "query_logql"}, format="json"
    )
    assert patched.status_code == 200, patched.json()
    persona = registry.get_registry(org.pk).by_name("specialist-postgres")
    assert persona.description == "Patched" and persona.tools == ("query_logql",)

    assert client.patch(f"{CUSTOM}{row.pk}/", {"enabled": False}, format="json").status_code == 200
    assert registry.get_registry(org.pk).by_name("specialist-postgres") is None

    assert client.delete(f"{CUSTOM}{row.pk}/").status_code == 204
    assert not UserAgent.objects.filter(pk=row.pk).exists()
    assert client.put(f"{CUSTOM}{row.pk}/", payload(), format="json").status_code == 405


def test_other_tenants_rows_do_not_exist_for_the_caller(org_admin, other_org):
    theirs = agent_of(other_org, "specialist-theirs", description="Globex")
    client = client_for(org_admin)
    assert client.get(f"{CUSTOM}{theirs.pk}/").status_code == 404
    assert client.patch(f"{CUSTOM}{theirs.pk}/", {"description": "hijack"}, format="json").status_code == 404
    assert client.delete(f"{CUSTOM}{theirs.pk}/").status_code == 404
    theirs.refresh_from_db()
    assert theirs.description == "Globex"


@pytest.mark.parametrize(
    ("overrides", "field", "fragment"),
    [
        ({"tools": ["query_promql", "make_coffee"]}, "tools", "Unknown tool(s): make_coffee"),
        ({"name": "reviewer"}, "name", "reserved"),
        ({"name": "Not Kebab"}, "name", "lowercase"),
        ({"permission_mode": "root"}, "permission_mode", "not a valid choice"),
        ({"skills": ["nope"]}, "skills", "Unknown skill(s): nope"),
        ({"max_turns": 0}, "max_turns", "greater than or equal to 1"),
    ],
)
def test_invalid_agents_get_a_400_with_the_field(org_admin, overrides, field, fragment):
    response = client_for(org_admin).post(CUSTOM, payload(**overrides), format="json")
    assert response.status_code == 400
    assert any(fragment in message for message in response.json()[field]), response.json()
    assert not UserAgent.objects.exists()


def test_duplicate_name_and_invalid_patch_are_refused(org_admin, org):
    client = client_for(org_admin)
    assert client.post(CUSTOM, payload(), format="json").status_code == 201
    duplicate = client.post(CUSTOM, payload(), format="json")
    assert duplicate.status_code == 400 and "already has an agent" in duplicate.json()["name"][0]
    row = UserAgent.objects.get()
    bad = client.patch(f"{CUSTOM}{row.pk}/", {"tools": ["rm_rf"]}, format="json")
    assert bad.status_code == 400
    row.refresh_from_db()
    assert row.tools == ["query_promql", "host_*"]


def test_org_admin_may_override_the_coordinator(org_admin, org):
    response = client_for(org_admin).post(
        CUSTOM, payload(name="default", description="Acme coordinator", tools=None), format="json"
    )
    assert response.status_code == 201, response.json()
    coordinator = registry.get_registry(org.pk).by_name("default")
    assert coordinator.description == "Acme coordinator" and coordinator.tools is None
    assert coordinator.max_turns == 12  # the coordinator's default when the field is left empty
    assert "**default**" not in client_for(org_admin).get("/api/agents/").json()["catalog"]
