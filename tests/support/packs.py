"""Packs for tests (docs/packs.md): a pack directory written with correct `files:` checksums, a
real `minisign` key pair and signature (the Debian package's CLI, as an author would sign), and the
pack as the archive an admin uploads.

    keys = minisign_keypair(tmp_path)
    pack = write_pack(tmp_path / "pack")            # persona specialist-packs, skill pack-runbook
    sign_with_minisign(pack, keys)                  # writes pack/pack.yaml.minisig
    data = archive_of(pack)                         # the .tar.gz bytes
    TrustedPackKey(..., public_key=keys.public_text)
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from agents_app.models import TrustedPackKey
from agents_app.packs.archive import build_archive, read_directory
from agents_app.packs.contents import MANIFEST, SIGNATURE
from agents_app.packs.manifest import file_hashes

MINISIGN = "/usr/bin/minisign"

PERSONA = """---
name: specialist-packs
description: Answers questions from the team's runbooks, installed from a pack.
when_to_use: When a question is about the procedures in the team's runbooks.
tools: [query_knowledge]
permission_mode: read-only
---

You answer from the runbooks in the knowledge base and say which runbook you used.
"""

SKILL = """---
name: pack-runbook
description: How to follow the team's restart runbook, step by step.
when_to_use: when a service must be restarted by the book
triggers: [restart runbook]
---

Follow the restart runbook: read checklist.md first, then do one step at a time.
"""

SKILL_CHECKLIST = "1. Tell the on-call channel.\n2. Drain the node.\n3. Restart the service.\n"


def write_pack(
    root: Path,
    name: str = "ops-extras",
    version: str = "1.0.0",
    personas: dict[str, str] | None = None,
    skills: dict[str, dict[str, str]] | None = None,
    mcp_servers: list[dict] | None = None,
    files: dict[str, str | bytes] | None = None,
    manifest: dict | None = None,
) -> Path:
    """Write a pack into the directory `root` (created) and return it.

    `personas`: {file stem: text} under agents/ (default: the persona `specialist-packs`, read-only,
    tools [query_knowledge]); `skills`: {folder: {file name: text}} under skills/ (default: the
    folder skill `pack-runbook` with SKILL.md and checklist.md); `files`: any other files
    {relative path: text or bytes}; `manifest`: more pack.yaml keys. Pass {} for no personas or
    no skills. `files:` in pack.yaml lists the SHA-256 of everything written, so the pack reads
    cleanly; change a file afterwards to tamper with it.
    """
    root = Path(root)
    if personas is None:
        personas = {"specialist-packs": PERSONA}
    if skills is None:
        skills = {"pack-runbook": {"SKILL.md": SKILL, "checklist.md": SKILL_CHECKLIST}}
    written: dict[str, str | bytes] = {f"agents/{stem}.md": text for stem, text in personas.items()}
    for folder, folder_files in skills.items():
        written.update({f"skills/{folder}/{filename}": text for filename, text in folder_files.items()})
    written.update(files or {})
    for relative, content in written.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    root.mkdir(parents=True, exist_ok=True)
    data = {
        "name": name,
        "version": version,
        "description": f"Test pack {name}",
        "author": "Pack Author <author@example.com>",
        **(manifest or {}),
    }
    if mcp_servers:
        data["mcp_servers"] = mcp_servers
    data["files"] = file_hashes(read_directory(root))
    (root / MANIFEST).write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return root


@dataclass(frozen=True)
class MinisignKeypair:
    public: Path  # the .pub file
    secret: Path  # the unencrypted (-W) secret key file
    public_text: str  # what an admin pastes into a trusted pack key
    key_id: str  # 16 hex digits, as minisign prints it


def _minisign(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [MINISIGN, *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=True
    )


def minisign_keypair(tmp_path: Path, name: str = "signer") -> MinisignKeypair:
    """A key pair from the real `minisign -G -W` (no password), in `tmp_path`/`name`.pub / .key."""
    public, secret = Path(tmp_path) / f"{name}.pub", Path(tmp_path) / f"{name}.key"
    _minisign("-G", "-W", "-p", str(public), "-s", str(secret), cwd=Path(tmp_path))
    text = public.read_text(encoding="utf-8")
    key_id = text.splitlines()[0].rsplit(" ", 1)[-1]  # "untrusted comment: minisign public key <ID>"
    return MinisignKeypair(public=public, secret=secret, public_text=text, key_id=f"{int(key_id, 16):016X}")


def sign_with_minisign(directory: Path, keypair: MinisignKeypair, trusted_comment: str = "") -> Path:
    """Sign `directory`/pack.yaml with the real `minisign -S`; returns the .minisig path."""
    signature = Path(directory) / SIGNATURE
    comment = ["-t", trusted_comment] if trusted_comment else []
    _minisign("-S", "-s", str(keypair.secret), "-m", MANIFEST, "-x", SIGNATURE, *comment, cwd=Path(directory))
    return signature


def archive_of(directory: Path) -> bytes:
    """The pack directory as the .tar.gz an admin uploads (build_archive of its files)."""
    return build_archive(read_directory(Path(directory)))


def minisign_verifies(directory: Path, keypair: MinisignKeypair) -> bool:
    """Whether the real `minisign -V` accepts `directory`/pack.yaml.minisig."""
    result = subprocess.run(
        [MINISIGN, "-V", "-p", str(keypair.public), "-m", MANIFEST, "-x", SIGNATURE],
        cwd=directory,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
    return result.returncode == 0


@pytest.fixture
def keys(tmp_path) -> MinisignKeypair:
    """A real minisign key pair (import this fixture together with `trusted`)."""
    return minisign_keypair(tmp_path)


@pytest.fixture
def trusted(org, keys) -> TrustedPackKey:
    """`keys` as the organization's trusted pack key, named "Pack Author"."""
    return TrustedPackKey.objects.create(
        organization=org, name="Pack Author", public_key=keys.public_text, key_id=keys.key_id
    )
