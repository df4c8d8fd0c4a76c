"""Skill files, sources and activation rules (docs/skills.md), without a model."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import textwrap

import pytest
from django.conf import settings

from agents_app.forms import UserSkillForm
from agents_app.models import UserSkill
from agents_app.personas import registry, skills
from agents_app.personas.schema import PersonaError, parse_persona, parse_skill, persona_to_markdown
from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.skills.handlers import skill_tool


def write(root, relative: str, text: str):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


SKILL_MD = """
    ---
    name: {name}
    description: {description}
    when_to_use: when the disk fills up
    triggers: [disk full, ENOSPC]
    ---

    Read reference.md first.
    """


@pytest.fixture(autouse=True)
def fresh_registry():
    """Skills re-read from files and rows for each test (organization ids repeat across tests)."""
    registry.reset()
    yield
    registry.reset()


@pytest.fixture
def mounted(tmp_path, monkeypatch):
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG, agents_dirs=[tmp_path]))
    registry.reset()
    yield tmp_path / "skills"
    registry.reset()


def persona(extra: str = "", name: str = "specialist-x"):
    return parse_persona(f"---\nname: {name}\ndescription: d\nwhen_to_use: w\n{extra}---\nbody\n")


def run(coroutine):
    return asyncio.run(coroutine)


def test_a_folder_skill_loads_beside_single_file_skills_with_its_files(mounted):
    write(mounted, "disk-cleanup/SKILL.md", SKILL_MD.format(name="disk-cleanup", description="Free disk"))
    write(mounted, "disk-cleanup/reference.md", "du -xh /var | sort -h")
    write(mounted, "disk-cleanup/scripts/find.sh", "find / -xdev -size +1G")
    write(mounted, "single.md", "---\nname: single\ndescription: one file\n---\nbody\n")

    loaded = {skill.name: skill for skill in registry.get_skill_registry().all()}

    assert {"disk-cleanup", "single", "incident-report", "promql-node-exporter"} <= set(loaded)
    assert "reference" not in loaded  # a folder's other .md files are its files, not skills
    folder = loaded["disk-cleanup"]
    assert folder.source == "mounted" and folder.triggers == ("disk full", "ENOSPC")
    assert folder.when_to_use == "when the disk fills up"
    assert skills.skill_files(folder) == ["reference.md", "scripts/find.sh"]
    assert skills.read_skill_file(folder, "reference.md") == "du -xh /var | sort -h"
    assert registry.get_skill_registry().warnings() == []


@pytest.mark.parametrize("path", ["../single.md", "/etc/passwd", "SKILL.md", "missing.md", "a\\..\\b"])
def test_paths_outside_the_skill_folder_are_refused(mounted, path):
    write(mounted, "disk-cleanup/SKILL.md", SKILL_MD.format(name="disk-cleanup", description="Free disk"))
    write(mounted, "single.md", "---\nname: single\ndescription: one file\n---\nsecret body\n")
    folder = registry.get_skill_registry().by_name("disk-cleanup")

    with pytest.raises(skills.SkillFileError):
        skills.read_skill_file(folder, path)


def test_symlinks_and_big_files_are_refused(mounted, tmp_path):
    write(mounted, "disk-cleanup/SKILL.md", SKILL_MD.format(name="disk-cleanup", description="Free disk"))
    outside = write(tmp_path, "outside.txt", "not yours")
    (mounted / "disk-cleanup" / "link.md").symlink_to(outside)
    (mounted / "disk-cleanup" / "big.txt").write_text("x" * (skills.MAX_SKILL_FILE_BYTES + 1))
    folder = registry.get_skill_registry().by_name("disk-cleanup")

    with pytest.raises(skills.SkillFileError, match="symbolic links"):
        skills.read_skill_file(folder, "link.md")
    with pytest.raises(skills.SkillFileError, match="larger than"):
        skills.read_skill_file(folder, "big.txt")
    assert "link.md" not in skills.skill_files(folder)


def test_an_invalid_skill_file_is_a_warning_naming_the_file_and_the_key(mounted):
    bad = write(mounted, "broken/SKILL.md", "---\nname: broken\ndescription: d\nalways: maybe\n---\nbody\n")
    write(mounted, "nameless/SKILL.md", "---\ndescription: d\n---\nbody\n")

    warnings = registry.get_skill_registry().warnings()

    assert any(str(bad) in w and "'always' must be true or false" in w for w in warnings)
    assert any("nameless/SKILL.md" in w and "missing required key 'name'" in w for w in warnings)
    assert registry.get_skill_registry().by_name("broken") is None


def test_parse_skill_reads_claude_code_skills_as_they_are():
    skill = parse_skill(
        "---\nname: pdf\ndescription: Read PDFs\nallowed-tools: Read, Grep\nlicense: MIT\n---\n"
        "Use pdftotext.\n"
    )
    assert (skill.name, skill.description, skill.body, skill.always) == (
        "pdf",
        "Read PDFs",
        "Use pdftotext.",
        False,
    )
    with pytest.raises(PersonaError, match="'triggers' must be a list"):
        parse_skill("---\nname: a\ndescription: d\ntriggers: 3\n---\nbody\n")


def test_skills_available_narrows_what_a_persona_is_offered_and_round_trips():
    narrowed = persona("skills_available: [promql-*]\n")
    none = persona("skills_available: []\n")

    assert set(skills.offer_for(narrowed, None).offered) == {"promql-node-exporter"}
    assert skills.offer_for(none, None).offered == {} and skills.offer_for(none, None).catalog == ""
    assert set(skills.offer_for(persona(), None).offered) == {"incident-report", "promql-node-exporter"}
    assert "skills_available:\n  - promql-*" in persona_to_markdown(narrowed)
    assert parse_persona(persona_to_markdown(narrowed)).skills_available == ("promql-*",)
    assert narrowed.extra == {}


def test_the_reviewer_is_offered_no_skill_unless_its_file_says_so():
    assert skills.offer_for(persona(name="reviewer"), None).offered == {}
    opted_in = persona("skills_available: [incident-report]\n", name="reviewer")
    assert list(skills.offer_for(opted_in, None).offered) == ["incident-report"]
    assert skill_tool(skills.offer_for(persona(name="reviewer"), None)) is None


def test_the_catalog_keeps_to_its_budget_and_names_the_rest():
    many = [
        dataclasses.replace(registry.get_skill_registry().by_name("incident-report"), name=f"s-{i}")
        for i in range(200)
    ]
    catalog = skills.render_catalog(many)
    assert len(catalog.encode()) <= skills.CATALOG_BUDGET_BYTES + 200 * 8
    assert "- s-0 —" in catalog and "s-199" in catalog.splitlines()[-1]
    assert "Write the report" not in catalog  # descriptions only, never bodies


@pytest.mark.django_db
def test_organization_skills_are_seen_by_their_organization_only(org, other_org):
    UserSkill.objects.create(organization=org, name="acme-deploys", description="How Acme deploys", body="b")

    assert "acme-deploys" in skills.offer_for(persona(), org.pk).offered
    assert "acme-deploys" not in skills.offer_for(persona(), other_org.pk).offered
    tool = skill_tool(skills.offer_for(persona(), other_org.pk))
    with pytest.raises(ToolError, match="no skill named 'acme-deploys'"):
        run(tool.handler(ToolContext(organization_id=other_org.pk), name="acme-deploys"))


@pytest.mark.django_db
def test_an_edited_organization_skill_is_offered_at_once(org):
    row = UserSkill.objects.create(organization=org, name="acme-deploys", description="old", body="b")
    assert skills.offer_for(persona(), org.pk).offered["acme-deploys"].description == "old"

    row.description = "new"
    row.save()

    assert skills.offer_for(persona(), org.pk).offered["acme-deploys"].description == "new"
    row.delete()
    assert "acme-deploys" not in skills.offer_for(persona(), org.pk).offered


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"name": "Bad Name"}, "name", "lowercase letters"),
        ({"description": " "}, "description", "one line"),
        ({"files": json.dumps({"../escape.md": "x"})}, "files", "relative path inside the skill"),
        ({"files": json.dumps({"a.md": 3})}, "files", "must be text"),
        ({"files": json.dumps(["a.md"])}, "files", "mapping of file names"),
    ],
)
def test_the_admin_form_refuses_an_unusable_skill(org_admin, org, changes, field, message):
    data = {
        "organization": org.pk,
        "name": "ok-skill",
        "description": "d",
        "when_to_use": "",
        "body": "b",
        "files": "{}",
        "enabled": "on",
    }
    data.update(changes)
    request = type("Request", (), {"user": org_admin})()

    form = UserSkillForm(data=data, request=request)

    assert not form.is_valid()
    assert any(message in error for error in form.errors[field])


@pytest.mark.django_db
def test_the_admin_form_saves_a_valid_skill_for_the_admins_organization(org_admin, org):
    data = {
        "organization": org.pk,
        "name": "ok-skill",
        "description": "d",
        "body": "b",
        "files": json.dumps({"a.md": "x"}),
        "enabled": "on",
    }
    form = UserSkillForm(data=data, request=type("Request", (), {"user": org_admin})())

    assert form.is_valid(), form.errors
    saved = form.save()
    assert saved.organization_id == org.pk and saved.to_skill().files == {"a.md": "x"}
