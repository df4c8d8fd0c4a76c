"""`manage.py ongrid_pack` (docs/packs.md, "Making a pack"): an author builds a pack from a
directory (files: listed in pack.yaml, their own keys and comments kept), signs it with a key from
`keygen` or from minisign, and verifies what they publish; a tampered pack fails verify."""

from __future__ import annotations

import base64
import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from agents_app.packs.archive import read_archive
from agents_app.packs.manifest import read_contents
from agents_app.packs.signatures import parse_public_key, verify
from tests.support.packs import MINISIGN, PERSONA, SKILL, minisign_keypair, sign_with_minisign

ROOT = Path(__file__).resolve().parents[2]

AUTHOR_MANIFEST = """\
# The ops team's extras: reviewed by #platform before each release.
name: ops-extras
version: "1.1.0"
description: Runbook specialists for the ops team
author: Ops team <ops@example.com>
x-reviewed-by: platform   # our own key
"""


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("ongrid_pack", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def pack(tmp_path) -> Path:
    """A pack as an author writes it: pack.yaml without files:, a persona, a folder skill, a README."""
    root = tmp_path / "ops-extras"
    (root / "agents").mkdir(parents=True)
    (root / "skills" / "pack-runbook").mkdir(parents=True)
    (root / "pack.yaml").write_text(AUTHOR_MANIFEST)
    (root / "agents" / "specialist-packs.md").write_text(PERSONA)
    (root / "skills" / "pack-runbook" / "SKILL.md").write_text(SKILL)
    (root / "skills" / "pack-runbook" / "checklist.md").write_text("1. Drain.\n2. Restart.\n")
    (root / "README.md").write_text("# Ops extras\n")
    return root


@pytest.fixture
def keys(tmp_path):
    public, secret = tmp_path / "keys" / "packs.pub", tmp_path / "keys" / "packs.key"
    public.parent.mkdir()
    out, _err = run("keygen", "-p", str(public), "-s", str(secret))
    return public, secret, out


def test_keygen_writes_a_key_pair_and_never_overwrites_one(keys):
    public, secret, out = keys
    key = parse_public_key(public.read_text())

    assert f"Key {key.key_id}" in out
    assert public.read_text().splitlines()[1] in out
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    before = secret.read_text()
    with pytest.raises(CommandError, match="already exists; it is not overwritten"):
        run("keygen", "-p", str(public.with_name("new.pub")), "-s", str(secret))
    assert secret.read_text() == before
    assert not public.with_name("new.pub").exists()


def test_build_lists_every_file_signs_and_writes_an_archive_that_verifies(pack, keys, tmp_path):
    public, secret, _out = keys
    archive = tmp_path / "dist" / "ops-extras-1.1.0.tar.gz"
    archive.parent.mkdir()

    out, _err = run("build", str(pack), "-o", str(archive), "--sign", str(secret))

    text = (pack / "pack.yaml").read_text()
    assert text.startswith(AUTHOR_MANIFEST)  # the author's keys, order and comments kept
    assert set(yaml.safe_load(text)["files"]) == {
        "README.md",
        "agents/specialist-packs.md",
        "skills/pack-runbook/SKILL.md",
        "skills/pack-runbook/checklist.md",
    }
    contents = read_contents(read_archive(archive.read_bytes()))
    key = parse_public_key(public.read_text())
    assert verify(contents.files["pack.yaml"], contents.signature, [key]) == key
    assert [persona.name for persona in contents.personas] == ["specialist-packs"]
    assert f"Signed with key {key.key_id}." in out
    assert "specialist-packs (read-only; tools: query_knowledge)" in out
    assert "Other files (not installed): README.md" in out
    # The real minisign accepts the signature made with the keygen key.
    checked = subprocess.run(
        [MINISIGN, "-V", "-p", str(public), "-m", "pack.yaml"], cwd=pack, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr


def test_verify_reports_the_contents_and_the_signer(pack, keys, tmp_path):
    public, secret, _out = keys
    archive = tmp_path / "ops-extras.tgz"
    run("build", str(pack), "-o", str(archive), "--sign", str(secret))

    out, _err = run("verify", str(archive), "--public-key", str(public))

    key_id = parse_public_key(public.read_text()).key_id
    assert out.splitlines()[0] == "ops-extras 1.1.0"
    assert "pack-runbook (extra files: 1): How to follow the team's restart runbook" in out
    assert f"Signature verified: signed with key {key_id}; trusted comment: timestamp:" in out
    assert "pack:ops-extras 1.1.0" in out


def test_a_key_made_by_minisign_signs_a_build(pack, tmp_path):
    author = minisign_keypair(tmp_path)
    run("build", str(pack), "-o", str(tmp_path / "p.tgz"), "--sign", str(author.secret))

    out, _err = run("verify", str(pack), "--public-key", str(author.public))

    assert f"signed with key {author.key_id}" in out


def test_signing_with_minisign_between_two_builds_keeps_the_signature(pack, tmp_path):
    author = minisign_keypair(tmp_path)
    run("build", str(pack), "-o", str(tmp_path / "unsigned.tgz"))  # lists files: in pack.yaml
    sign_with_minisign(pack, author)

    _out, err = run("build", str(pack), "-o", str(tmp_path / "signed.tgz"))

    assert "removed its old signature" not in err
    contents = read_contents(read_archive((tmp_path / "signed.tgz").read_bytes()))
    assert verify(contents.files["pack.yaml"], contents.signature, [parse_public_key(author.public_text)])


def test_verify_fails_on_a_tampered_pack(pack, keys, tmp_path):
    public, secret, _out = keys
    run("build", str(pack), "-o", str(tmp_path / "p.tgz"), "--sign", str(secret))
    (pack / "agents" / "specialist-packs.md").write_text(PERSONA.replace("read-only", "dual-sign-required"))

    with pytest.raises(CommandError) as failed:
        run("verify", str(pack), "--public-key", str(public))

    assert str(failed.value) == (
        "agents/specialist-packs.md does not match the checksum in pack.yaml (changed after signing?)"
    )


def test_verify_fails_when_pack_yaml_was_changed_after_signing(pack, keys, tmp_path):
    public, secret, _out = keys
    run("build", str(pack), "-o", str(tmp_path / "p.tgz"), "--sign", str(secret))
    manifest = pack / "pack.yaml"
    manifest.write_text(manifest.read_text().replace('version: "1.1.0"', 'version: "1.1.1"'))

    with pytest.raises(CommandError, match="does not match the signed file"):
        run("verify", str(pack), "--public-key", str(public))


def test_verify_names_a_signer_the_given_key_is_not(pack, keys, tmp_path):
    public, secret, _out = keys
    other = minisign_keypair(tmp_path, "other")
    run("build", str(pack), "-o", str(tmp_path / "p.tgz"), "--sign", str(secret))
    signer = parse_public_key(public.read_text()).key_id

    with pytest.raises(CommandError, match=f"signed with key {signer}, which is not one of your trusted"):
        run("verify", str(pack), "--public-key", str(other.public))


def test_verify_of_an_unsigned_pack(pack, keys, tmp_path):
    public, _secret, _out = keys
    run("build", str(pack), "-o", str(tmp_path / "p.tgz"))

    out, _err = run("verify", str(tmp_path / "p.tgz"))
    assert out.splitlines()[-1] == "Not signed."
    with pytest.raises(CommandError, match="the pack is not signed"):
        run("verify", str(tmp_path / "p.tgz"), "--public-key", str(public))


def test_the_same_pack_builds_the_same_archive(pack, tmp_path):
    run("build", str(pack), "-o", str(tmp_path / "one.tgz"))
    run("build", str(pack), "-o", str(tmp_path / "two.tgz"))
    assert (tmp_path / "one.tgz").read_bytes() == (tmp_path / "two.tgz").read_bytes()


def test_a_rebuild_after_an_edit_drops_the_stale_signature(pack, keys, tmp_path):
    _public, secret, _out = keys
    run("build", str(pack), "-o", str(tmp_path / "p.tgz"), "--sign", str(secret))
    (pack / "README.md").write_text("# Ops extras, v2\n")

    _out, err = run("build", str(pack), "-o", str(tmp_path / "p.tgz"))

    assert not (pack / "pack.yaml.minisig").exists()
    assert "removed its old signature" in err
    assert read_contents(read_archive((tmp_path / "p.tgz").read_bytes())).signature is None


def test_the_default_archive_name_is_name_and_version(pack, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run("build", str(pack))
    assert (tmp_path / "ops-extras-1.1.0.tar.gz").is_file()


def test_build_refuses_an_archive_inside_the_pack(pack):
    with pytest.raises(CommandError, match="write the archive outside the pack's directory"):
        run("build", str(pack), "-o", str(pack / "ops-extras.tgz"))


def test_build_refuses_a_broken_persona_and_writes_no_archive(pack, tmp_path):
    (pack / "agents" / "broken.md").write_text("---\nname: broken\n---\nno description\n")

    with pytest.raises(
        CommandError, match="^ops-extras/agents/broken.md: missing required key 'description'"
    ):
        run("build", str(pack), "-o", str(tmp_path / "p.tgz"))
    assert not (tmp_path / "p.tgz").exists()


def test_build_refuses_an_encrypted_key_before_touching_the_pack(pack, tmp_path, keys):
    _public, secret, _out = keys
    lines = secret.read_text().splitlines()
    data = bytearray(base64.b64decode(lines[1]))
    data[2:4] = b"Sc"  # what minisign -G (with a password) writes
    encrypted = tmp_path / "encrypted.key"
    encrypted.write_text(f"{lines[0]}\n{base64.b64encode(bytes(data)).decode()}\n")

    with pytest.raises(CommandError, match="encrypted with a password: decrypt it with minisign"):
        run("build", str(pack), "-o", str(tmp_path / "p.tgz"), "--sign", str(encrypted))
    assert (pack / "pack.yaml").read_text() == AUTHOR_MANIFEST


def test_build_refuses_a_directory_without_pack_yaml(tmp_path):
    with pytest.raises(CommandError, match="has no pack.yaml"):
        run("build", str(tmp_path))


def test_verify_exits_1_with_the_message_on_the_command_line(pack, tmp_path):
    run("build", str(pack), "-o", str(tmp_path / "p.tgz"))
    (pack / "README.md").write_text("changed\n")
    env = {**os.environ, "SECRET_KEY": os.environ.get("SECRET_KEY") or "t", "PYTHONPATH": str(ROOT)}

    result = subprocess.run(
        [sys.executable, str(ROOT / "manage.py"), "ongrid_pack", "verify", str(pack)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )

    assert result.returncode == 1
    assert "README.md does not match the checksum in pack.yaml" in result.stderr
    assert "Traceback" not in result.stderr
