"""`pack.yaml` and what a pack contains (contract; see the brief)."""

from __future__ import annotations

from agents_app.packs.contents import Manifest, PackContents, PackFiles


def parse_manifest(text: str) -> Manifest:
    """`pack.yaml` as a Manifest, or PackError naming the key that is wrong."""
    raise NotImplementedError


def file_hashes(files: PackFiles) -> dict[str, str]:
    """{path: sha256 hex} of every file but the manifest and its signature (what `files:` lists)."""
    raise NotImplementedError


def read_contents(files: PackFiles) -> PackContents:
    """The pack checked file by file against its manifest (a tampered, missing or unlisted file is
    a PackError) and parsed: personas under agents/, skills under skills/."""
    raise NotImplementedError
