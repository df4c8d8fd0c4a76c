"""pack.yaml and what a pack contains (agents_app.packs.manifest): every wrong key is refused with
its name, every file is checked against its checksum (a changed, added or removed file is refused
by name), and personas and skills are read as the registry reads them, Claude Code files too."""

from __future__ import annotations

import copy

import pytest
import yaml

from agents_app.packs.archive import read_archive, read_directory
from agents_app.packs.contents import PackError
from agents_app.packs.manifest import file_hashes, parse_manifest, read_contents
from tests.support.packs import archive_of, minisign_keypair, sign_with_minisign, write_pack

GOOD = {
    "name": "ops-extras",
    "version": "1.2.0",
    "description": "Extra specialists",
    "author": "Ops team",
    "homepage": "https://packs.example.com/ops-extras",
    "mcp_servers": [
        {
            "name": "grafana",
            "transport": "streamable_http",
            "url": "https://grafana-mcp.example.com/mcp",
            "headers": ["Authorization"],
            "timeout": 45,
            "description": "Grafana dashboards",
        }
    ],
    "files": {"agents/a.md": "ab" * 32},
    "x-team": "platform",
}

SERVER = GOOD["mcp_servers"][0]

CLAUDE_CODE_AGENT = """---
name: log-reader
description: Reads the logs of a host and says what went wrong.
tools: Read, Grep
model: sonnet
permissionMode: default
maxTurns: 5
color: blue
---

You read logs and summarise the errors you find.
"""


def manifest_with(**changes) -> str:
    data = copy.deepcopy(GOOD)
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return yaml.safe_dump(data, sort_keys=False)


def server_with(**changes) -> str:
    server = copy.deepcopy(GOOD["mcp_servers"][0])
    for key, value in changes.items():
        if value is None:
            server.pop(key, None)
        else:
            server[key] = value
    return manifest_with(mcp_servers=[server])


def test_a_good_manifest_reads_every_key():
    manifest = parse_manifest(manifest_with())

    assert (manifest.name, manifest.version, manifest.author) == ("ops-extras", "1.2.0", "Ops team")
    assert manifest.homepage == "https://packs.example.com/ops-extras"
    (server,) = manifest.mcp_servers
    assert (server.name, server.transport, server.headers, server.timeout) == (
        "grafana",
        "streamable_http",
        ("Authorization",),
        45.0,
    )
    assert manifest.files == {"agents/a.md": "ab" * 32}
    assert manifest.as_dict()["mcp_servers"][0]["url"] == "https://grafana-mcp.example.com/mcp"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (manifest_with(name=None), "'name' is required"),
        (manifest_with(name="Ops_Extras"), "'name' 'Ops_Extras' is not a pack name"),
        (manifest_with(version=None), "'version' is required"),
        (manifest_with(version=1.2), "'version' must be text: write it in quotes"),
        (manifest_with(version="1.0 beta"), "'version' '1.0 beta' may use letters, digits"),
        (manifest_with(version="1" * 51), "'version' is longer than 50"),
        (manifest_with(description=["a"]), "'description' must be text"),
        (manifest_with(author="a" * 201), "'author' is longer than 200"),
        (manifest_with(homepage="ftp://example.com"), "'homepage' must be an http:// or https:// URL"),
        (manifest_with(mcp_server=[]), r"unknown keys: mcp_server \(keys of your own must start with 'x-'\)"),
        (manifest_with(mcp_servers={"grafana": {}}), "'mcp_servers' must be a list"),
        (manifest_with(files=["agents/a.md"]), "'files' must map each file's path to its SHA-256"),
        (
            manifest_with(files={"agents/a.md": "abc"}),
            "'files' gives agents/a.md a checksum that is not a SHA-256",
        ),
        (manifest_with(files={"../a.md": "ab" * 32}), r"pack.yaml: 'files': \.\./a\.md: '\.\.' in a path"),
        (manifest_with(files={"./a.md": "ab" * 32}), "'files' lists './a.md', which is not a file path"),
        (manifest_with(files={"pack.yaml": "ab" * 32}), "'files' lists 'pack.yaml'"),
        ("- a list\n", "pack.yaml must be a mapping"),
        ("name: [unclosed\n", "pack.yaml is not valid YAML at line 2"),
        ("name: &n ops\nversion: *n\n", "anchors and aliases .* are not allowed in pack.yaml"),
        ("1: x\nname: ops\n", "pack.yaml's keys must be text: 1"),
    ],
)
def test_each_wrong_top_level_key_is_named(text, message):
    with pytest.raises(PackError, match=message):
        parse_manifest(text)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (server_with(transport="stdio"), r"mcp_servers\[0\] \(grafana\): packs cannot run commands"),
        (server_with(command="/bin/sh -c 'curl evil'"), "packs cannot run commands"),
        (server_with(transport="websocket"), "'transport' must be streamable_http or sse"),
        (server_with(name="Grafana MCP"), r"mcp_servers\[0\]: 'name' must be lower-case"),
        (server_with(url=None), r"\(grafana\): 'url' is required"),
        (server_with(url="file:///etc/passwd"), "'url' must be an http:// or https:// URL"),
        (
            server_with(url="https://admin:hunter2@grafana/mcp"),
            "user name or password; packs carry no secrets",
        ),
        (
            server_with(url="https://grafana/mcp?api_key=abc"),
            "passes api_key in its query; packs carry no secrets",
        ),
        (
            server_with(headers={"Authorization": "Bearer abc"}),
            "'headers' lists header names only.*no secrets",
        ),
        (server_with(headers=["Authorization: Bearer abc"]), "packs carry no secrets"),
        (server_with(headers=[{"Authorization": "Bearer abc"}]), "packs carry no secrets"),
        (server_with(timeout=0), "'timeout' must be a number of seconds between 1 and 600"),
        (server_with(timeout=601), "'timeout' must be a number"),
        (server_with(timeout="fast"), "'timeout' must be a number"),
        (server_with(token="abc"), r"mcp_servers\[0\] \(grafana\) has unknown keys: token"),
        (manifest_with(mcp_servers=["grafana"]), r"mcp_servers\[0\] must be a mapping"),
        (manifest_with(mcp_servers=[copy.deepcopy(SERVER) for _ in "ab"]), "names grafana more than once"),
    ],
)
def test_each_wrong_mcp_server_key_is_named(text, message):
    with pytest.raises(PackError, match=message):
        parse_manifest(text)


def test_a_server_with_only_a_name_and_url_gets_the_defaults():
    (server,) = parse_manifest(
        manifest_with(mcp_servers=[{"name": "logs", "url": "http://logs:9000/sse"}])
    ).mcp_servers
    assert (server.transport, server.headers, server.timeout) == ("streamable_http", (), 30.0)


@pytest.fixture
def pack(tmp_path):
    return write_pack(
        tmp_path / "pack",
        personas={"specialist-packs": _persona("specialist-packs"), "log-reader": CLAUDE_CODE_AGENT},
        skills={
            "pack-runbook": {
                "SKILL.md": _skill("pack-runbook"),
                "checklist.md": "1. Drain.\n2. Restart.\n",
                "ref/limits.md": "At most one node at a time.\n",
            }
        },
        files={
            "README.md": "# Ops extras\n",
            "LICENSE": "MIT\n",
            "skills/quick-check.md": _skill("quick-check"),
        },
        mcp_servers=[{"name": "grafana", "url": "http://grafana:8000/mcp", "headers": ["Authorization"]}],
    )


def _persona(name: str, extra: str = "") -> str:
    return (
        f"---\nname: {name}\ndescription: A specialist from a pack.\nwhen_to_use: When asked.\n"
        f"tools: [query_knowledge]\n{extra}---\n\nYou answer from the runbooks.\n"
    )


def _skill(name: str) -> str:
    return f"---\nname: {name}\ndescription: The {name} procedure.\n---\n\nDo it step by step.\n"


def test_a_pack_reads_its_personas_skills_servers_and_other_files(pack):
    contents = read_contents(read_directory(pack))

    assert [persona.name for persona in contents.personas] == ["log-reader", "specialist-packs"]
    specialist = contents.personas[1]
    assert specialist.tools == ("query_knowledge",)
    assert specialist.source == "user" and specialist.path == "ops-extras/agents/specialist-packs.md"
    skills = {skill.name: skill for skill in contents.skills}
    assert set(skills) == {"pack-runbook", "quick-check"}
    assert dict(skills["pack-runbook"].files) == {
        "checklist.md": "1. Drain.\n2. Restart.\n",
        "ref/limits.md": "At most one node at a time.\n",
    }
    assert skills["pack-runbook"].path == "ops-extras/skills/pack-runbook/SKILL.md"
    assert skills["quick-check"].files == {}
    assert [server.name for server in contents.manifest.mcp_servers] == ["grafana"]
    assert {"README.md", "LICENSE"} <= set(contents.files)
    assert contents.signature is None


def test_a_claude_code_agent_file_loads_with_its_import_notes(pack):
    contents = read_contents(read_directory(pack))
    reader = next(persona for persona in contents.personas if persona.name == "log-reader")

    assert reader.when_to_use  # filled from the description: Claude Code files have none
    assert reader.permission_mode == "read-only"
    assert reader.max_turns == 5
    assert "query_knowledge" in reader.tools and "Read" not in reader.tools
    assert reader.model == "sonnet"  # resolved per organization later
    notes = " ".join(reader.import_notes)
    assert "Read" in notes and "Grep" in notes and "color" in notes


def test_the_same_pack_reads_the_same_from_its_archive(pack):
    assert read_contents(read_archive(archive_of(pack))) == read_contents(read_directory(pack))


def test_a_signed_pack_carries_its_signature_text(pack, tmp_path):
    sign_with_minisign(pack, minisign_keypair(tmp_path))
    contents = read_contents(read_directory(pack))
    assert contents.signature == (pack / "pack.yaml.minisig").read_text()


def test_a_file_changed_after_signing_is_refused_by_name(pack):
    (pack / "agents" / "specialist-packs.md").write_text(
        _persona("specialist-packs", "permission_mode: dual-sign-required\n")
    )

    with pytest.raises(PackError) as refused:
        read_contents(read_directory(pack))
    assert str(refused.value) == (
        "agents/specialist-packs.md does not match the checksum in pack.yaml (changed after signing?)"
    )


def test_a_file_added_after_signing_is_refused_by_name(pack):
    (pack / "agents" / "sneaky.md").write_text(_persona("sneaky"))
    with pytest.raises(PackError, match=r"^agents/sneaky.md is not listed in pack.yaml's files"):
        read_contents(read_directory(pack))


def test_a_file_removed_after_signing_is_refused_by_name(pack):
    (pack / "LICENSE").unlink()
    with pytest.raises(PackError, match="^LICENSE is listed in pack.yaml but missing from the pack"):
        read_contents(read_directory(pack))


def test_a_pack_without_a_manifest_is_refused(pack):
    files = dict(read_directory(pack))
    del files["pack.yaml"]
    with pytest.raises(PackError, match="^no pack.yaml at the top of the pack$"):
        read_contents(files)


def test_a_persona_error_surfaces_with_its_path(tmp_path):
    broken = "---\nname: broken-one\ndescription: x\nwhen_to_use: y\npermission_mode: root\n---\nbody\n"
    pack = write_pack(tmp_path / "p", personas={"broken": broken})
    with pytest.raises(PackError, match=r"^ops-extras/agents/broken.md: 'permission_mode' must be one of"):
        read_contents(read_directory(pack))


def test_a_persona_that_is_not_utf8_is_refused(tmp_path):
    pack = write_pack(tmp_path / "p", files={"agents/latin.md": "---\nname: café\n---\n".encode("latin-1")})
    with pytest.raises(PackError, match="^agents/latin.md is not UTF-8 text$"):
        read_contents(read_directory(pack))


def test_two_personas_with_one_name_are_refused(tmp_path):
    pack = write_pack(tmp_path / "p", personas={"one": _persona("twin"), "two": _persona("twin")})
    with pytest.raises(PackError, match="two personas are named twin: ops-extras/agents/one.md and"):
        read_contents(read_directory(pack))


def test_readmes_and_nested_files_under_agents_are_not_personas(tmp_path):
    pack = write_pack(
        tmp_path / "p", files={"agents/README.md": "# Our agents\n", "agents/drafts/wip.md": "not yet\n"}
    )
    assert [persona.name for persona in read_contents(read_directory(pack)).personas] == ["specialist-packs"]


def test_a_skill_folder_must_be_named_like_its_skill(tmp_path):
    pack = write_pack(tmp_path / "p", skills={"runbook": {"SKILL.md": _skill("pack-runbook")}})
    with pytest.raises(PackError, match="skills/runbook/SKILL.md names the skill pack-runbook; its folder"):
        read_contents(read_directory(pack))


def test_a_skill_folder_without_skill_md_is_refused(tmp_path):
    pack = write_pack(tmp_path / "p", skills={"pack-runbook": {"skill.md": _skill("pack-runbook")}})
    with pytest.raises(PackError, match="skills/pack-runbook/ has no SKILL.md"):
        read_contents(read_directory(pack))


def test_a_skill_error_surfaces_with_its_path(tmp_path):
    pack = write_pack(
        tmp_path / "p", skills={"empty": {"SKILL.md": "---\nname: empty\ndescription: x\n---\n"}}
    )
    with pytest.raises(PackError, match="^ops-extras/skills/empty/SKILL.md: a skill needs a body"):
        read_contents(read_directory(pack))


def test_a_binary_file_in_a_skill_folder_is_refused(tmp_path):
    skill = {"SKILL.md": _skill("pack-runbook"), "diagram.png": b"\x89PNG\r\n\x1a\n\xff\xfe"}
    pack = write_pack(tmp_path / "p", skills={"pack-runbook": skill})
    with pytest.raises(PackError, match="^skills/pack-runbook/diagram.png is not UTF-8 text$"):
        read_contents(read_directory(pack))


def test_two_skills_with_one_name_are_refused(tmp_path):
    pack = write_pack(tmp_path / "p", files={"skills/pack-runbook.md": _skill("pack-runbook")})
    with pytest.raises(PackError, match="two skills are named pack-runbook"):
        read_contents(read_directory(pack))


def test_file_hashes_lists_every_file_but_the_manifest_and_signature(pack):
    hashes = file_hashes({"pack.yaml": b"x", "pack.yaml.minisig": b"y", "b.md": b"", "a.md": b"abc"})
    assert list(hashes) == ["a.md", "b.md"]
    assert hashes["b.md"] == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
