"""The persona file format (R1): every key, defaults, list forms, wildcards, and one clear
PersonaError (with the file path) for each kind of malformed file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents_app.personas.schema import (
    PersonaError,
    parse_persona,
    parse_skill,
    persona_to_markdown,
    select_tools,
    unknown_keys,
)

FULL = """---
name: specialist-postgres
description: PostgreSQL specialist
when_to_use: |
  When the database is slow or refuses connections.
    - replication lag
tools:
  - query_promql
  - host_*
disallowed_tools: host_bash, host_probe_*
permission_mode: mutating-with-confirm
max_turns: 9
max_tool_calls: 20
model: gpt-4.1
critical_reminder: Never run DDL.
skills: [promql-node-exporter]
colour: blue
---

# Role
You inspect PostgreSQL.
"""

MINIMAL = "---\nname: {name}\ndescription: d\nwhen_to_use: w\n---\nbody\n"


def test_every_field_is_read():
    persona = parse_persona(FULL, source="mounted", path="/agents/pg.md")
    assert persona.name == "specialist-postgres"
    assert persona.description == "PostgreSQL specialist"
    assert persona.when_to_use == "When the database is slow or refuses connections.\n  - replication lag"
    assert persona.tools == ("query_promql", "host_*")
    assert persona.disallowed_tools == ("host_bash", "host_probe_*")
    assert persona.permission_mode == "mutating-with-confirm"
    assert persona.max_turns == 9
    assert persona.max_tool_calls == 20
    assert persona.model == "gpt-4.1"
    assert persona.critical_reminder == "Never run DDL."
    assert persona.skills == ("promql-node-exporter",)
    assert persona.body == "# Role\nYou inspect PostgreSQL."
    assert persona.source == "mounted" and persona.path == "/agents/pg.md"
    assert persona.extra == {"colour": "blue"}
    assert unknown_keys(persona) == ["colour"]


def test_defaults_for_a_worker_and_for_the_coordinator():
    worker = parse_persona(MINIMAL.format(name="specialist-x"))
    assert worker.tools is None  # absent: the coordinator's read-only set
    assert worker.disallowed_tools == ()
    assert worker.permission_mode == "read-only"
    assert worker.max_turns == 15
    assert worker.max_tool_calls is None and worker.model is None
    assert worker.skills == () and worker.extra == {} and worker.critical_reminder == ""
    assert worker.source == "builtin"
    coordinator = parse_persona(MINIMAL.format(name="default"))
    assert coordinator.max_turns == 12 and coordinator.is_coordinator


def test_tools_accept_a_comma_string_and_drop_duplicates():
    persona = parse_persona(MINIMAL.replace("---\nbody", "tools: a_b, c ,a_b,\n---\nbody").format(name="x"))
    assert persona.tools == ("a_b", "c")
    empty = parse_persona(MINIMAL.replace("---\nbody", "tools: []\n---\nbody").format(name="x"))
    assert empty.tools == ()  # an explicit empty whitelist is not "absent"


def test_wildcards_select_and_blacklist_beats_whitelist():
    persona = parse_persona(
        MINIMAL.replace(
            "---\nbody", "tools: [host_*, query_promql]\ndisallowed_tools: [host_bash, '*_tcp']\n---\nbody"
        ).format(name="x")
    )
    available = ["query_promql", "query_logql", "host_bash", "host_du_summary", "host_probe_tcp"]
    assert select_tools(persona, available) == ["query_promql", "host_du_summary"]


def test_absent_whitelist_means_the_default_set_minus_the_blacklist():
    persona = parse_persona(
        MINIMAL.replace("---\nbody", "disallowed_tools: query_logql\n---\nbody").format(name="x")
    )
    assert select_tools(persona, ["query_promql", "query_logql", "host_bash"], default=["query_*"]) == [
        "query_promql"
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("just a body, no front matter", "no front matter"),
        ("", "no front matter"),
        ("---\nname: x\ndescription: d\n", "never closed"),
        (
            "---\nname: x\ndescription: [oops\nwhen_to_use: w\n---\n",
            "invalid YAML in the front matter at line",
        ),
        ("---\n- a\n- b\n---\nbody", "must be a mapping"),
        ("---\ndescription: d\nwhen_to_use: w\n---\n", "missing required key 'name'"),
        ("---\nname: x\nwhen_to_use: w\n---\n", "missing required key 'description'"),
        ("---\nname: x\ndescription: d\nwhen_to_use: [w]\n---\n", "'when_to_use' must be text"),
        ("---\nname: x\ndescription: '  '\nwhen_to_use: w\n---\n", "'description' must not be empty"),
        ("---\nname: Specialist_X\ndescription: d\nwhen_to_use: w\n---\n", "invalid name"),
        ("---\nname: 12\ndescription: d\nwhen_to_use: w\n---\n", "'name' must be text, not a number"),
        ("---\nname: x\ndescription: [a]\nwhen_to_use: w\n---\n", "'description' must be text, not a list"),
        ("---\nname: x\ndescription: d\nwhen_to_use: w\ntools: 3\n---\n", "'tools' must be a list"),
        ("---\nname: x\ndescription: d\nwhen_to_use: w\ntools: [1]\n---\n", "must list names as text"),
        ("---\nname: x\ndescription: d\nwhen_to_use: w\ntools: ['rm -rf']\n---\n", "invalid entry"),
        (
            "---\nname: x\ndescription: d\nwhen_to_use: w\nmax_turns: many\n---\n",
            "'max_turns' must be a whole number",
        ),
        (
            "---\nname: x\ndescription: d\nwhen_to_use: w\nmax_turns: true\n---\n",
            "'max_turns' must be a whole number",
        ),
        ("---\nname: x\ndescription: d\nwhen_to_use: w\nmax_turns: 0\n---\n", "'max_turns' must be between"),
        ("---\nname: x\ndescription: d\nwhen_to_use: w\nmax_turns: 500\n---\n", "between 1 and 200"),
        (
            "---\nname: x\ndescription: d\nwhen_to_use: w\npermission_mode: root\n---\n",
            "'permission_mode' must be one of",
        ),
        ("---\nname: x\ndescription: d\nwhen_to_use: w\nmodel: 4\n---\n", "'model' must be text"),
        (
            "---\nname: x\ndescription: d\nwhen_to_use: w\nskills: [Bad Skill]\n---\n",
            "'skills' has an invalid entry",
        ),
    ],
)
def test_each_kind_of_malformed_file_raises_one_persona_error_with_the_path(text, message):
    with pytest.raises(PersonaError) as caught:
        parse_persona(text, path="/srv/agents/broken.md")
    assert caught.value.path == "/srv/agents/broken.md"
    assert message in caught.value.message
    assert str(caught.value).startswith("/srv/agents/broken.md: ")


def test_yaml_error_names_the_line_of_the_file():
    text = "\n\n---\nname: x\ndescription: d\nwhen_to_use: : w\n---\nbody"
    with pytest.raises(PersonaError, match="at line 6"):
        parse_persona(text, path="p.md")


def test_canonical_text_round_trips_exactly():
    persona = parse_persona(FULL, path="x.md")
    text = persona_to_markdown(persona)
    again = parse_persona(text, path="x.md")
    assert again == persona
    assert persona_to_markdown(again) == text


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[2] / "personas").rglob("*.md")), ids=str)
def test_builtin_persona_files_are_written_in_canonical_form(path):
    text = path.read_text(encoding="utf-8")
    assert persona_to_markdown(parse_persona(text, path=str(path))) == text


def test_skill_files_parse_and_need_a_body():
    skill = parse_skill("---\nname: my-skill\ndescription: does x\n---\nDo x.\n", path="s.md")
    assert (skill.name, skill.description, skill.body, skill.path) == ("my-skill", "does x", "Do x.", "s.md")
    with pytest.raises(PersonaError, match="needs a body"):
        parse_skill("---\nname: my-skill\ndescription: does x\n---\n", path="s.md")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_arbitrary_text_raises_nothing_but_persona_error(text):
    try:
        parse_persona(text, path="fuzz.md")
    except PersonaError as exc:
        assert exc.path == "fuzz.md"


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("---\n:[]{}'\"!&*|>#%@ ,abc-_019\t?")), max_size=80).map(
        lambda body: "---\n" + body + "\n---\nbody"
    )
)
def test_arbitrary_front_matter_raises_nothing_but_persona_error(text):
    try:
        parse_persona(text, path="fuzz.md")
    except PersonaError as exc:
        assert exc.path == "fuzz.md"
