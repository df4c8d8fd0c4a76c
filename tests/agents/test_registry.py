"""The agent registry (R2, R3, R6): recursive loading, collisions, precedence, atomic reload,
live replace/remove, the organization overlay with its version check, skills and the catalog."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connections

from agents_app.models import RegistryVersion, UserAgent
from agents_app.personas import registry
from agents_app.personas.catalog import agent_catalog
from agents_app.personas.registry import AgentRegistry, SkillRegistry
from agents_app.personas.schema import parse_persona


def persona_text(name: str, description: str = "d", when: str = "w", extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: {description}\nwhen_to_use: {when}\n{extra}---\nbody of {name}\n"


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def fresh_registries():
    registry.reset()
    yield
    registry.reset()


@pytest.fixture
def mounted(tmp_path, monkeypatch):
    """Point ONGRID_AGENTS_DIRS (as parsed into settings.CONFIG) at two temporary directories."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG, agents_dirs=[first, second]))
    registry.reset()
    return first, second


def test_load_walks_the_root_recursively_and_records_source_and_path(tmp_path):
    write(tmp_path, "a.md", persona_text("specialist-a"))
    deep = write(tmp_path, "team/x/y/b.md", persona_text("specialist-b"))
    write(tmp_path, "notes.txt", "not a persona")
    reg = AgentRegistry()
    reg.load(tmp_path)
    assert [p.name for p in reg.all()] == ["specialist-a", "specialist-b"]
    found = reg.by_name("specialist-b")
    assert found.path == str(deep) and found.source == "mounted"
    assert reg.by_name("nope") is None
    assert reg.warnings() == []


def test_a_broken_file_is_a_warning_and_the_rest_still_loads(tmp_path):
    write(tmp_path, "good.md", persona_text("specialist-good"))
    broken = write(tmp_path, "broken.md", "---\nname: x\ndescription: [\n---\n")
    reg = AgentRegistry()
    reg.load(tmp_path)
    assert [p.name for p in reg.all()] == ["specialist-good"]
    assert len(reg.warnings()) == 1 and reg.warnings()[0].startswith(f"{broken}: invalid YAML")


def test_same_name_twice_in_one_root_warns_with_both_paths_and_first_sorted_wins(tmp_path):
    first = write(tmp_path, "a/dup.md", persona_text("specialist-dup", description="from a"))
    second = write(tmp_path, "b/dup.md", persona_text("specialist-dup", description="from b"))
    reg = AgentRegistry()
    reg.load(tmp_path)
    assert reg.by_name("specialist-dup").description == "from a"
    (warning,) = reg.warnings()
    assert str(first) in warning and str(second) in warning


def test_unknown_keys_tools_and_skills_are_warned_about(tmp_path):
    extra = "tools: [query_promql, hots_*, made_up_tool]\nskills: [no-such-skill]\ncolour: red\n"
    write(tmp_path, "x.md", persona_text("specialist-x", extra=extra))
    reg = AgentRegistry(skills=SkillRegistry)
    reg.load(tmp_path)
    assert reg.by_name("specialist-x") is not None  # warnings never stop a persona from loading
    text = "\n".join(reg.warnings())
    assert "unknown key(s) kept but unused: colour" in text
    assert "unknown tool(s): hots_*, made_up_tool" in text
    assert "unknown skill(s): no-such-skill" in text


def test_missing_root_gives_an_empty_registry(tmp_path):
    reg = AgentRegistry()
    reg.reload(tmp_path / "does-not-exist")
    assert reg.all() == [] and reg.warnings() == []


def test_later_roots_override_earlier_ones(tmp_path, caplog):
    builtin, mounted = tmp_path / "builtin", tmp_path / "mounted"
    write(builtin, "default.md", persona_text("default", description="built-in coordinator"))
    write(builtin, "specialist-a.md", persona_text("specialist-a"))
    override = write(mounted, "default.md", persona_text("default", description="fleet coordinator"))
    reg = AgentRegistry()
    with caplog.at_level("INFO", logger="agents_app.personas.registry"):
        reg.reload(builtin, mounted)
    assert reg.by_name("default").description == "fleet coordinator"
    assert reg.by_name("default").path == str(override)
    assert reg.by_name("specialist-a") is not None
    assert any("overrides default" in record.getMessage() for record in caplog.records)
    reg.reload(mounted, builtin)  # order is the precedence
    assert reg.by_name("default").description == "built-in coordinator"


def test_load_adds_a_root_on_top_of_what_is_loaded(tmp_path):
    write(tmp_path / "one", "a.md", persona_text("specialist-a", description="one"))
    write(tmp_path / "two", "a.md", persona_text("specialist-a", description="two"))
    write(tmp_path / "two", "b.md", persona_text("specialist-b"))
    reg = AgentRegistry()
    reg.load(tmp_path / "one")
    reg.load(tmp_path / "two")
    assert [(p.name, p.description) for p in reg.all()] == [("specialist-a", "two"), ("specialist-b", "d")]


def test_replace_upserts_and_remove_deletes_live():
    reg = AgentRegistry()
    reg.replace(parse_persona(persona_text("specialist-a", description="v1")))
    reg.replace(parse_persona(persona_text("specialist-a", description="v2")))
    assert reg.by_name("specialist-a").description == "v2"
    assert reg.remove("specialist-a") is True
    assert reg.by_name("specialist-a") is None
    assert reg.remove("specialist-a") is False


def test_an_overlay_shadows_its_parent_and_removing_reveals_the_parent_again():
    base = AgentRegistry()
    base.replace(parse_persona(persona_text("default", description="file coordinator")))
    overlay = AgentRegistry(parent=base)
    overlay.replace(parse_persona(persona_text("default", description="org coordinator"), source="user"))
    assert overlay.by_name("default").description == "org coordinator"
    assert [p.description for p in overlay.all()] == ["org coordinator"]
    overlay.remove("default")
    assert overlay.by_name("default").description == "file coordinator"


def test_reload_is_atomic_for_concurrent_readers(tmp_path):
    """Readers running while another thread reloads see set A or set B, never empty or mixed."""
    root_a, root_b = tmp_path / "a", tmp_path / "b"
    for i in range(40):
        write(root_a, f"a{i}.md", persona_text(f"alpha-{i}"))
        write(root_b, f"b{i}.md", persona_text(f"beta-{i}"))
    for root in (root_a, root_b):
        write(root, "shared.md", persona_text("shared"))
    names_a = {f"alpha-{i}" for i in range(40)} | {"shared"}
    names_b = {f"beta-{i}" for i in range(40)} | {"shared"}
    reg = AgentRegistry()
    reg.reload(root_a)
    stop = threading.Event()
    seen: list[str] = []
    errors: list[str] = []

    def reader():
        try:
            read_until_stopped()
        except Exception as exc:  # a crash in a reader thread must fail the test, not vanish
            errors.append(repr(exc))

    def read_until_stopped():
        while not stop.is_set():
            names = {p.name for p in reg.all()}
            if names == names_a:
                seen.append("a")
            elif names == names_b:
                seen.append("b")
            else:
                errors.append(f"partial set of {len(names)}")
            if reg.by_name("shared") is None:  # in both sets, so it must never vanish
                errors.append("shared persona missing")

    readers = [threading.Thread(target=reader) for _ in range(4)]
    for thread in readers:
        thread.start()
    try:
        for i in range(30):
            reg.reload(root_b if i % 2 == 0 else root_a)
    finally:
        stop.set()
        for thread in readers:
            thread.join()
    assert errors == []
    assert "a" in seen and "b" in seen


def test_catalog_lists_specialists_by_name_and_never_default_or_reviewer():
    personas = [
        parse_persona(persona_text("specialist-z", description="Zed", when="|\n  First line\n  more\n")),
        parse_persona(persona_text("default")),
        parse_persona(persona_text("reviewer")),
        parse_persona(
            "---\nname: specialist-a\ndescription: Alpha\nwhen_to_use: |\n\n  Use for alpha.\n  - more\n---\n"
        ),
    ]
    assert agent_catalog(personas) == (
        "Available specialists (valid `subagent_type` values):\n"
        "- **specialist-a** — Alpha\n"
        "  When to use: Use for alpha.\n"
        "- **specialist-z** — Zed\n"
        "  When to use: First line"
    )
    assert agent_catalog([]) == "Available specialists (valid `subagent_type` values):\n- (none)"
    assert agent_catalog(personas[1:3]).endswith("\n- (none)")


EXPECTED_TOOLS = {
    "specialist-compute": {
        "get_host_load",
        "get_host_processes",
        "host_bash",
        "query_promql",
        "query_knowledge",
        "query_devices",
    },
    "specialist-disk": {
        "host_du_summary",
        "host_find_large_files",
        "host_stat_file",
        "host_bash",
        "get_host_load",
        "query_promql",
        "query_knowledge",
    },
    "specialist-network": {
        "host_probe_http",
        "host_probe_dns",
        "host_probe_tcp",
        "host_bash",
        "query_promql",
        "expand_topology",
        "find_topology_node",
        "query_knowledge",
        "query_devices",
    },
    "specialist-ops": {
        "host_bash",
        "get_host_processes",
        "host_restart_service",
        "query_change_events",
        "query_knowledge",
        "query_devices",
        "acknowledge_incident",
        "resolve_incident",
        "silence_incident",
    },
    "specialist-sre": {
        "query_promql",
        "query_logql",
        "query_traceql",
        "query_alert_rules",
        "query_incidents",
        "get_active_incidents",
        "query_knowledge",
        "expand_topology",
    },
    "specialist-k8s": {
        "k8s_get",
        "k8s_describe",
        "k8s_events",
        "k8s_logs",
        "k8s_rollout_history",
        "k8s_top",
        "k8s_rollout_restart",
        "k8s_rollout_undo",
        "k8s_scale",
        "query_change_events",
        "query_knowledge",
        "query_promql",
    },
    "reviewer": {
        "query_knowledge",
        "query_change_events",
        "query_incidents",
        "get_incident_detail",
        "query_devices",
    },
    "reporter": {"query_incidents", "get_incident_detail", "query_change_events"},
}


def test_builtin_personas_load_cleanly_with_their_domain_tools():
    reg = registry.get_registry()
    assert reg.warnings() == []
    assert {p.name for p in reg.all()} == set(EXPECTED_TOOLS) | {"default", "incident-investigator"}
    for name, tools in EXPECTED_TOOLS.items():
        assert set(reg.by_name(name).tools) == tools, name
    coordinator = reg.by_name("default")
    assert coordinator.tools is None and coordinator.max_turns == 12 and coordinator.source == "builtin"
    investigator = reg.by_name("incident-investigator")
    assert investigator.max_tool_calls == 18
    assert not any(tool.startswith("host_") for tool in investigator.tools)
    modes = {p.name: p.permission_mode for p in reg.all()}
    assert modes.pop("specialist-ops") == modes.pop("specialist-k8s") == "mutating-with-confirm"
    k8s_reads = {"k8s_get", "k8s_describe", "k8s_events", "k8s_logs", "k8s_rollout_history", "k8s_top"}
    assert k8s_reads <= set(investigator.tools) and not any("rollout_undo" in t for t in investigator.tools)
    assert set(modes.values()) == {"read-only"}
    assert "Decision: approve" in reg.by_name("reviewer").body
    catalog = agent_catalog(reg.all())
    assert (
        "**incident-investigator**" in catalog and "**default**" not in catalog and "reviewer" not in catalog
    )


def test_builtin_skills_load_and_personas_activate_them():
    skills = registry.get_skill_registry()
    assert skills.warnings() == []
    for persona in registry.get_registry().all():
        for name in persona.skills:
            assert skills.by_name(name) is not None, (persona.name, name)
    assert skills.by_name("incident-report").body.startswith("Write the report")


def test_mounted_directories_override_builtins_and_bring_skills(mounted):
    first, second = mounted
    write(first, "default.md", persona_text("default", description="first"))
    write(second, "coord/default.md", persona_text("default", description="second"))
    write(second, "skills/pg.md", "---\nname: pg-tuning\ndescription: tune\n---\nUse pgbouncer.\n")
    write(second, "specialist-pg.md", persona_text("specialist-pg", extra="skills: [pg-tuning]\n"))
    reg = registry.get_registry()
    assert reg.by_name("default").description == "second"
    assert reg.by_name("default").source == "mounted"
    assert reg.by_name("specialist-disk").source == "builtin"
    assert reg.by_name("pg-tuning") is None  # a skill is not a persona
    assert registry.get_skill_registry().by_name("pg-tuning").body == "Use pgbouncer."
    assert reg.warnings() == []


# --- the organization overlay -------------------------------------------------------------------


def make_agent(org, name="specialist-pg", **fields) -> UserAgent:
    defaults = {"description": "Postgres", "when_to_use": "When postgres hurts", "tools": ["query_promql"]}
    return UserAgent.objects.create(organization=org, name=name, **{**defaults, **fields})


@pytest.mark.django_db
def test_get_registry_overlays_enabled_user_agents_of_that_organization_only(org, other_org):
    make_agent(org)
    make_agent(org, name="specialist-off", enabled=False)
    make_agent(org, name="default", description="Acme coordinator")
    mine, theirs = registry.get_registry(org.pk), registry.get_registry(other_org.pk)
    assert mine.by_name("specialist-pg").source == "user"
    assert mine.by_name("specialist-off") is None
    assert mine.by_name("default").description == "Acme coordinator"
    assert mine.by_name("specialist-disk").source == "builtin"  # the file layers show through
    assert theirs.by_name("specialist-pg") is None
    assert theirs.by_name("default").source == "builtin"
    assert registry.get_registry().by_name("specialist-pg") is None


@pytest.mark.django_db
def test_an_unchanged_registry_costs_one_query(org, django_assert_num_queries):
    make_agent(org)
    registry.get_registry(org.pk)
    with django_assert_num_queries(1):
        assert registry.get_registry(org.pk).by_name("specialist-pg") is not None


@pytest.mark.django_db
def test_a_version_bump_from_elsewhere_is_noticed_at_the_next_call(org):
    agent = make_agent(org)
    reg = registry.get_registry(org.pk)
    # Another process's edit: a row change plus a version bump, with no signal in this process.
    UserAgent.objects.filter(pk=agent.pk).update(description="edited elsewhere")
    assert registry.get_registry(org.pk).by_name("specialist-pg").description == "Postgres"
    RegistryVersion.bump(org.pk)
    assert registry.get_registry(org.pk).by_name("specialist-pg").description == "edited elsewhere"
    assert registry.get_registry(org.pk) is reg  # rebuilt in place; holders keep a live object


@pytest.mark.django_db(transaction=True)
def test_saving_disabling_renaming_and_deleting_update_the_live_registry(org):
    reg = registry.get_registry(org.pk)
    agent = make_agent(org)
    assert reg.by_name("specialist-pg").description == "Postgres"  # replaced on commit
    agent.description = "Postgres v2"
    agent.save()
    assert reg.by_name("specialist-pg").description == "Postgres v2"
    agent.name = "specialist-postgres"
    agent.save()
    assert reg.by_name("specialist-pg") is None and reg.by_name("specialist-postgres") is not None
    agent.enabled = False
    agent.save()
    assert reg.by_name("specialist-postgres") is None
    agent.enabled = True
    agent.save()
    agent.delete()
    assert reg.by_name("specialist-postgres") is None
    assert RegistryVersion.current(org.pk) == 6  # one bump per write


@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_edit_changes_nothing(org):
    from django.db import transaction

    reg = registry.get_registry(org.pk)
    with pytest.raises(RuntimeError), transaction.atomic():
        make_agent(org)
        raise RuntimeError("abort")
    assert reg.by_name("specialist-pg") is None
    assert registry.get_registry(org.pk).by_name("specialist-pg") is None
    assert RegistryVersion.current(org.pk) == 0


@pytest.mark.django_db(transaction=True)
async def test_aget_registry_works_on_the_event_loop(org):
    from asgiref.sync import sync_to_async

    from agents_app.personas.registry import aget_registry

    await sync_to_async(make_agent)(org)
    try:
        reg = await aget_registry(org.pk)
        assert reg.by_name("specialist-pg").description == "Postgres"
        assert (await aget_registry()).by_name("specialist-pg") is None
    finally:  # the async ORM's worker thread keeps its connection; let the test database go
        await sync_to_async(connections.close_all)()
