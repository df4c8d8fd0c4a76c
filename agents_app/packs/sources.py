"""Fetching a pack under the egress policy: from a Git repository, a catalog index or an
archive URL (contract; see the brief)."""

from __future__ import annotations

from dataclasses import dataclass

from agents_app.packs.contents import PackFiles


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    version: str
    description: str
    url: str  # absolute: the index's relative URLs resolved against the index URL
    sha256: str = ""  # when given, the downloaded archive must match it


def fetch_git(url: str, ref: str, path: str = "", token: str = "") -> tuple[PackFiles, str]:
    """The pack at `path` inside the repository at `ref` (a branch or a tag), and the commit."""
    raise NotImplementedError


def fetch_catalog(index_url: str) -> list[CatalogEntry]:
    """The packs a catalog index lists (docs/packs.md, "Publishing")."""
    raise NotImplementedError


def fetch_from_catalog(index_url: str, name: str, version: str = "") -> tuple[PackFiles, CatalogEntry]:
    """The named pack (its newest version, or `version`) from the catalog, downloaded and read."""
    raise NotImplementedError


def download_archive(url: str) -> bytes:
    """An archive's bytes, at most archive.MAX_PACK_BYTES, under the egress policy."""
    raise NotImplementedError
