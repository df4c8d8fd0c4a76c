"""Reading a pack's files from a directory, a .tar.gz or a .zip, safely (contract; see the brief)."""

from __future__ import annotations

from pathlib import Path

from agents_app.packs.contents import PackFiles

MAX_PACK_BYTES = 5 * 1024 * 1024  # a whole pack, uncompressed
MAX_PACK_FILES = 500


def read_archive(data: bytes, filename: str = "") -> PackFiles:
    """The files of a .tar.gz / .tgz / .zip pack (type from the bytes, `filename` for messages)."""
    raise NotImplementedError


def read_directory(root: Path) -> PackFiles:
    """The files of a pack directory (symlinks refused)."""
    raise NotImplementedError


def build_archive(files: PackFiles) -> bytes:
    """A deterministic .tar.gz of `files` (sorted, fixed mtime/owner): the same files give the
    same bytes, so a stored release's SHA-256 identifies it."""
    raise NotImplementedError
