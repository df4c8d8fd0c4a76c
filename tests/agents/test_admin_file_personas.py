"""The built-in and mounted personas in the admin: listed beside the organization's user agents,
viewable as their .md file, copied into a draft override that is live only once saved (issue 29)
and that the next chat uses; the tool picker; the organization chosen for platform staff who have
only one (issue 15)."""

from __future__ import annotations

import dataclasses
import html
import json
from pathlib import Path

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from agents_app.models import UserAgent
from agents_app.personas import registry
from agents_app.toolsets.skills.manifest import SKILL_TOOL
from fakes.openai_server import call, text, tool_calls
from tests.agents.test_user_agents_admin import ADD_URL, LIST_URL, change_url, errors_of, form_data

BUILTINS = (
    "default",
    "incident-investigator",
    "reporter",
    "reviewer",
    "specialist-compute",
    "specialist-disk",
    "specialist-k8s",
    "specialist-network",
    "specialist-ops",
    "specialist-sre",
)


@pytest.fixture(autouse=True)
def fresh_registries():
    registry.reset()
    yield
    registry.reset()


def persona_url(name: str) -> str:
    return reverse("admin:agents_app_useragent_persona", args=[name])


def copy_url(name: str) -> str:
    return reverse("admin:agents_app_useragent_copy", args=[name])


def file_rows(page: str) -> dict[str, str]:
    """name → source, read from the built-in/mounted table of the changelist."""
    section = page.split('id="file-personas"', 1)[1]
    rows = {}
    for chunk in section.split('<tr class="file-persona" data-name="')[1:]:
        name = chunk.split('"', 1)[0]
        rows[name] = chunk.split('<td class="persona-source">', 1)[1].split("<", 1)[0].strip()
    return rows


@pytest.mark.django_db
def test_an_empty_changelist_still_shows_every_builtin_persona(client, org_admin):
    client.force_login(org_admin)
    page = client.get(LIST_URL).content.decode()
    assert "0 user agents" in page
    assert file_rows(page) == {name: "builtin" for name in BUILTINS}
    assert "Disk specialist" in page  # descriptions are shown, not only names


@pytest.mark.django_db
def test_mounted_personas_are_listed_with_their_source(client, org_admin, tmp_path, settings):
    (tmp_path / "specialist-postgres.md").write_text(
        "---\nname: specialist-postgres\ndescription: PostgreSQL specialist\nwhen_to_use: slow queries\n"
        "tools: [query_promql]\n---\n\nYou inspect PostgreSQL.\n"
    )
    settings.CONFIG = dataclasses.replace(settings.CONFIG, agents_dirs=(tmp_path,))
    registry.reset()
    client.force_login(org_admin)
    rows = file_rows(client.get(LIST_URL).content.decode())
    assert rows["specialist-postgres"] == "mounted" and rows["specialist-disk"] == "builtin"


@pytest.mark.django_db
def test_a_builtin_persona_is_shown_read_only_as_its_markdown(client, org_admin):
    client.force_login(org_admin)
    page = html.unescape(client.get(persona_url("specialist-disk")).content.decode())
    source = Path(registry.file_registry().by_name("specialist-disk").path).read_text()
    assert source.strip() in page  # the whole file, front matter and body
    assert 'value="Copy to edit"' in page
    reviewer = client.get(persona_url("reviewer")).content.decode()
    assert "Copy to edit" not in reviewer  # the review gate's agent cannot be overridden
    assert client.get(persona_url("no-such-agent")).status_code == 404


@pytest.mark.django_db
def test_members_cannot_see_or_copy_personas_in_the_admin(client, member):
    client.force_login(member)
    assert client.get(persona_url("specialist-disk")).status_code == 302  # to the admin login
    assert client.post(copy_url("specialist-disk")).status_code == 302
    assert not UserAgent.objects.exists()


def draft_form(client, copied) -> tuple[str, dict]:
    """The add form "Copy to edit" led to: its page, and the POST data that Save sends as it stands
    (the prefilled values of every field, as the browser would post them)."""
    assert copied.status_code == 302, copied
    page = client.get(copied["Location"])
    form = page.context["adminform"].form
    data = {}
    for name in form.fields:
        value = form[name].value()
        if name in ("tools", "disallowed_tools"):
            data[name] = "\n".join(value or [])  # free text under the field's name is split alike
        elif name == "skills":
            data[name] = "\n".join(value) if isinstance(value, list) else value or ""
        elif name == "enabled":
            if value:
                data[name] = "on"
        elif name == "extra":
            data[name] = value if isinstance(value, str) else json.dumps(value or {})
        elif value is not None:
            data[name] = value
    return page.content.decode(), data


@pytest.mark.django_db
def test_copy_to_edit_opens_a_prefilled_draft_that_is_live_only_once_saved(client, org, org_admin):
    client.force_login(org_admin)
    copied = client.post(copy_url("specialist-disk"))
    assert copied["Location"].startswith(ADD_URL + "?copy_of=specialist-disk")
    page, data = draft_form(client, copied)
    builtin = registry.file_registry().by_name("specialist-disk")
    assert html.escape(builtin.body.strip()[:60]) in page  # prefilled from the file
    assert "nothing changes until you save it" in page
    # Opening the draft changed nothing: no row, and the next chat still uses the built-in.
    assert not UserAgent.objects.filter(organization=org).exists()
    assert registry.get_registry(org.pk).by_name("specialist-disk").source == "builtin"

    saved = client.post(copied["Location"], data)
    assert saved.status_code == 302, errors_of(saved)
    agent = UserAgent.objects.get(organization=org, name="specialist-disk")
    assert agent.body == builtin.body and list(agent.tools) == list(builtin.tools)
    assert agent.created_by == org_admin and agent.enabled
    assert registry.get_registry(org.pk).by_name("specialist-disk").source == "user"

    agent.body = "edited"
    agent.save()
    again = client.post(copy_url("specialist-disk"))  # a second click never overwrites edits
    assert again["Location"] == change_url(agent)
    assert UserAgent.objects.get(pk=agent.pk).body == "edited"
    rows = client.get(LIST_URL).content.decode()
    assert "overridden by your agent" in rows

    assert client.post(copy_url("reviewer")).status_code == 403
    reviewer_draft = client.get(ADD_URL + "?copy_of=reviewer").content.decode()
    assert "nothing changes until you save it" not in reviewer_draft
    assert not UserAgent.objects.filter(name="reviewer").exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("inline_executor")
def test_the_next_chat_uses_the_edited_copy(client, org, org_admin, member, agents_llm):
    client.force_login(org_admin)
    _, data = draft_form(client, client.post(copy_url("specialist-disk")))
    data.update(
        body="ACME DISK RULES: always check /srv/acme first.",
        tools="host_du_summary",
        model="acme-disk-model",
    )
    response = client.post(ADD_URL + "?copy_of=specialist-disk", data)
    assert response.status_code == 302, errors_of(response)

    agents_llm.add(
        "default",
        tool_calls(
            call("AgentTool", {"description": "du", "subagent_type": "specialist-disk", "prompt": "du /"})
        ),
        text("done"),
    )
    agents_llm.add("specialist-disk", text("/srv/acme holds 40G"))
    chat = APIClient()
    chat.force_authenticate(member)
    session = chat.post("/api/sessions/", {}, format="json").json()["id"]
    answer = chat.post(f"/api/sessions/{session}/messages/?wait=1", {"content": "disk full?"}, format="json")
    assert answer.status_code == 200, answer.content

    (worker_request,) = agents_llm.seen["specialist-disk"]
    system = worker_request.messages[0]["content"]
    assert "ACME DISK RULES: always check /srv/acme first." in system
    assert worker_request.body["model"] == "acme-disk-model"
    # Its whitelist, and the Skill tool of an agent offered skills (docs/skills.md).
    assert [t["function"]["name"] for t in worker_request.body["tools"]] == [
        "host_du_summary",
        SKILL_TOOL.name,
    ]


@pytest.mark.django_db
def test_tool_picker_groups_tools_and_saves_ticks_and_wildcards(client, org, org_admin):
    client.force_login(org_admin)
    page = client.get(ADD_URL).content.decode()
    for group in ("tool-group-read", "tool-group-write", "tool-group-control"):
        assert group in page
    assert 'type="checkbox" name="tools" value="host_restart_service"' in page
    data = form_data(tools=None, disallowed_tools=None)
    data["tools"] = ["query_promql", "host_du_summary"]
    data["tools_patterns"] = "host_probe_*\n*_incident"
    data["disallowed_tools_patterns"] = "mcp__grafana__*"
    response = client.post(ADD_URL, data)
    assert response.status_code == 302, errors_of(response)
    agent = UserAgent.objects.get(name="specialist-postgres")
    assert agent.tools == ["query_promql", "host_du_summary", "host_probe_*", "*_incident"]
    assert agent.disallowed_tools == ["mcp__grafana__*"]

    edit = client.get(change_url(agent)).content.decode()
    assert 'value="query_promql" checked' in edit and 'value="query_logql" checked' not in edit
    assert "host_probe_*\n*_incident</textarea>" in edit

    data["tools"] = []
    data["tools_patterns"] = ""
    client.post(change_url(agent), data)
    assert UserAgent.objects.get(pk=agent.pk).tools is None  # nothing ticked: the default set
    data["tools_patterns"] = "hots_*"
    assert "Unknown tool(s): hots_*" in errors_of(client.post(change_url(agent), data))["tools"][0]


@pytest.mark.django_db
def test_platform_staff_with_one_organization_are_not_asked_for_it(client, org, django_user_model):
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(root)
    page = client.get(ADD_URL).content.decode()
    assert f'<input type="hidden" name="organization" value="{org.pk}"' in page
    response = client.post(ADD_URL, form_data())
    assert response.status_code == 302, errors_of(response)
    assert UserAgent.objects.get().organization == org
    page, data = draft_form(client, client.post(copy_url("specialist-network")))
    assert f'<input type="hidden" name="organization" value="{org.pk}"' in page
    assert client.post(ADD_URL + "?copy_of=specialist-network", data).status_code == 302
    assert UserAgent.objects.get(name="specialist-network").organization == org


@pytest.mark.django_db
def test_platform_staff_with_several_organizations_pick_one(client, org, other_org, django_user_model):
    root = django_user_model.objects.create_superuser("root", password="root-pass-123")
    client.force_login(root)
    page = client.get(ADD_URL).content.decode()
    assert '<select name="organization"' in page
    assert 'name="organization"' in client.get(persona_url("specialist-disk")).content.decode()
    copied = client.post(copy_url("specialist-disk"), {"organization": str(other_org.pk)})
    _, data = draft_form(client, copied)
    assert str(data["organization"]) == str(other_org.pk)  # the draft is for the organization chosen
    assert client.post(copied["Location"], data).status_code == 302
    assert UserAgent.objects.get(name="specialist-disk").organization == other_org
