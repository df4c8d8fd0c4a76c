"""Fetching a pack under the egress policy (docs/packs.md, "Installing from Git", "Publishing a
catalog"): from a Git repository at a branch or tag, from a catalog index listing packs, or from
an archive URL.

Why it is built this way:

- Git goes through `ops_app.core.git` (the vault's Git sync uses it too): a shallow fetch into a
  temporary bare repository under the data directory, removed afterwards (also on error), the
  address pinned to the one the egress policy checked, files read from Git objects and never
  checked out. A symlink or submodule in the pack is refused rather than skipped: the signed
  `files:` list would not match anyway, and the admin learns which file is wrong.
- HTTP goes through `ops_app.core.outbound.client()`, which checks every address it connects to.
  The catalog index is not redirected (its URL is the one the admin trusts, so a redirect is an
  error that says so); an archive download follows redirects (release hosting redirects to a
  storage host), every hop checked by the policy, and its SHA-256 checked against the index.
- Sizes are capped while the bytes arrive (the index at 1 MB, an archive at
  `archive.MAX_PACK_BYTES`), so a server cannot make this process hold more.
- Errors are fixed words and an HTTP status or git's exit status: nothing a remote server answers
  is echoed back. Nothing here is trusted: the signature and the files' hashes are checked later
  (`signatures`, `manifest.read_contents`), whatever the source.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from urllib.parse import urljoin, urlsplit

import httpx
from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop
from packaging.version import InvalidVersion, Version

from agents_app.packs import archive
from agents_app.packs.contents import PackError, PackFiles
from agents_app.packs.manifest import VERSION_RE
from agents_app.personas.schema import NAME_MAX_LENGTH, NAME_RE
from ops_app.core import git, outbound
from ops_app.core.egress import EgressRefused

FETCH_DIR = "pack-fetch"  # under settings.CONFIG.data_dir: one temporary bare repository per fetch
FETCHED_REF = "refs/ongrid/fetched"
MAX_INDEX_BYTES = 1024 * 1024
MAX_REDIRECTS = 5  # an archive download's hops, each checked by the egress policy
HTTP_TIMEOUT = httpx.Timeout(30.0)
SHA256_HEX = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    version: str
    description: str
    url: str  # absolute: the index's relative URLs resolved against the index URL
    sha256: str = ""  # when given, the downloaded archive must match it


# --- Git ------------------------------------------------------------------------------------------


def fetch_git(url: str, ref: str, path: str = "", token: str = "") -> tuple[PackFiles, str]:
    """The pack at `path` inside the repository at `ref` (a branch or a tag), and the commit."""
    try:
        remote = git.parse_remote(url)
        refused = git.ref_refusal(ref)
        if refused:
            raise PackError(refused)
        folder = git.normalised_path(path)
        address = git.checked_address(remote)
        with (
            _scratch_repository() as git_dir,
            git.runner(remote, address, git.Credentials(token=token), git_dir) as runner,
        ):
            git.ensure_bare(runner)
            commit = git.fetch_ref(runner, url, ref, FETCHED_REF)
            entries = _pack_entries(git.list_tree(runner, FETCHED_REF, folder), folder)
            contents = git.read_blobs(runner, [entry.sha for entry in entries])
    except git.GitError as error:
        raise PackError(str(error)) from None
    prefix = f"{folder}/" if folder else ""
    return {entry.path.removeprefix(prefix): contents[entry.sha] for entry in entries}, commit


@contextlib.contextmanager
def _scratch_repository() -> Iterator[Path]:
    """An empty directory for one fetch's bare repository, removed afterwards whatever happens."""
    base = settings.CONFIG.data_dir / FETCH_DIR
    base.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="git-", dir=base))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _pack_entries(entries: list[git.TreeEntry], folder: str) -> list[git.TreeEntry]:
    """The pack's files, or PackError: nothing under the path, a symlink or submodule (named), or
    more files or bytes than a pack may hold (checked on the listing, before anything is read)."""
    if not entries:
        raise PackError(_("the repository has no files under the path %(path)s") % {"path": folder or "/"})
    if len(entries) > archive.MAX_PACK_FILES:
        raise PackError(_("the pack has more than %(count)s files") % {"count": archive.MAX_PACK_FILES})
    total = 0
    for entry in entries:
        if entry.kind == "commit":
            raise PackError(
                _("%(path)s is a submodule; a pack holds regular files only") % {"path": entry.path}
            )
        if not entry.regular:
            raise PackError(
                _("%(path)s is a symbolic link; a pack holds regular files only") % {"path": entry.path}
            )
        total += entry.size
        if total > archive.MAX_PACK_BYTES:
            values = {"path": entry.path, "limit": _megabytes(archive.MAX_PACK_BYTES)}
            raise PackError(_("the pack is larger than %(limit)s MB (at %(path)s)") % values)
    return entries


# --- a catalog index ------------------------------------------------------------------------------


def fetch_catalog(index_url: str) -> list[CatalogEntry]:
    """The packs a catalog index lists (docs/packs.md, "Publishing a catalog")."""
    data = _download(index_url, _INDEX, MAX_INDEX_BYTES, follow_redirects=False)
    try:
        index = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError included; nesting deep enough to overflow
        raise PackError(_("the catalog index is not JSON")) from None
    packs = index.get("packs") if isinstance(index, dict) else None
    if not isinstance(packs, list):
        raise PackError(_('the catalog index has no "packs" list'))
    return [_entry(item, number, index_url) for number, item in enumerate(packs, start=1)]


def _entry(item: object, number: int, index_url: str) -> CatalogEntry:
    """One entry of the index checked key by key; PackError naming the entry and the key."""
    if not isinstance(item, dict):
        raise PackError(_("catalog entry %(entry)s is not an object") % {"entry": number})
    name = item.get("name")
    if not isinstance(name, str) or len(name) > NAME_MAX_LENGTH or not NAME_RE.match(name):
        raise PackError(
            _("catalog entry %(entry)s has no valid name (lower-case words joined by hyphens)")
            % {"entry": number}
        )
    label = {"entry": f"{number} ({name})"}
    version = item.get("version")
    if not isinstance(version, str) or not VERSION_RE.match(version):
        raise PackError(_("catalog entry %(entry)s has no valid version") % label)
    description = item.get("description", "")
    if not isinstance(description, str):
        raise PackError(_("catalog entry %(entry)s has a description that is not text") % label)
    url = item.get("url")
    resolved = urljoin(index_url, url) if isinstance(url, str) and url.strip() == url and url else ""
    if not _http_url(resolved):
        raise PackError(_("catalog entry %(entry)s has no valid http or https URL") % label)
    sha256 = item.get("sha256", "")
    if not isinstance(sha256, str) or (sha256 and not SHA256_HEX.match(sha256.lower())):
        raise PackError(_("catalog entry %(entry)s has a sha256 that is not 64 hexadecimal digits") % label)
    return CatalogEntry(name, version, description.strip(), resolved, sha256.lower())


def fetch_from_catalog(index_url: str, name: str, version: str = "") -> tuple[PackFiles, CatalogEntry]:
    """The named pack (its newest version, or `version`) from the catalog, downloaded and read."""
    entry = choose(fetch_catalog(index_url), name, version)
    data = download_archive(entry.url)
    if entry.sha256 and hashlib.sha256(data).hexdigest() != entry.sha256:
        values = {"name": entry.name, "version": entry.version}
        raise PackError(
            _("the archive of %(name)s %(version)s does not match the catalog's SHA-256") % values
        )
    return archive.read_archive(data, filename=PurePosixPath(urlsplit(entry.url).path).name), entry


def choose(entries: list[CatalogEntry], name: str, version: str = "") -> CatalogEntry:
    """The entry of pack `name` at `version` (the same text, or the same version number), or
    its newest version; PackError when the catalog does not list it."""
    listed = [entry for entry in entries if entry.name == name]
    if not listed:
        raise PackError(_("the catalog lists no pack named %(name)s") % {"name": name})
    if not version:
        return max(listed, key=functools.cmp_to_key(lambda a, b: compare_versions(a.version, b.version)))
    exact = [entry for entry in listed if entry.version == version]
    same = exact or [entry for entry in listed if compare_versions(entry.version, version) == 0]
    if not same:
        values = {"name": name, "version": version, "versions": ", ".join(entry.version for entry in listed)}
        raise PackError(
            _("the catalog has no version %(version)s of %(name)s (it lists %(versions)s)") % values
        )
    return same[0]


def compare_versions(first: str, second: str) -> int:
    """-1, 0 or 1: as version numbers (packaging's rules: 1.10 after 1.9) when both parse, else
    as text."""
    try:
        a, b = Version(first), Version(second)
    except InvalidVersion:
        a, b = first, second  # type: ignore[assignment]
    return (a > b) - (a < b)


# --- HTTP -----------------------------------------------------------------------------------------


def download_archive(url: str) -> bytes:
    """An archive's bytes, at most archive.MAX_PACK_BYTES, under the egress policy."""
    return _download(url, _ARCHIVE, archive.MAX_PACK_BYTES, follow_redirects=True)


# What each download's failures are called: fixed words, the status or the kind of failure only.
_INDEX = {
    "url": gettext_noop("the catalog index URL is not an http or https URL"),
    "failed": gettext_noop("the catalog index could not be fetched: %(reason)s"),
    "large": gettext_noop("the catalog index is larger than %(limit)s MB"),
    "redirect": gettext_noop(
        "the catalog index URL redirects elsewhere (%(reason)s), which is not followed: give the final URL"
    ),
}
_ARCHIVE = {
    "url": gettext_noop("the pack archive URL is not an http or https URL"),
    "failed": gettext_noop("the pack archive could not be downloaded: %(reason)s"),
    "large": gettext_noop("the pack archive is larger than %(limit)s MB"),
    "redirect": gettext_noop("the pack archive URL redirects more than %(count)s times"),
}


def _download(url: str, words: dict[str, str], limit: int, *, follow_redirects: bool) -> bytes:
    """The body of a GET to `url` (200 only), read until `limit` bytes, or PackError in `words`."""
    if not _http_url(url):
        raise PackError(_(words["url"]))
    options = {"timeout": HTTP_TIMEOUT, "follow_redirects": follow_redirects, "max_redirects": MAX_REDIRECTS}
    try:
        with outbound.client(**options) as client, client.stream("GET", url) as response:
            _check_status(response, words)
            return _read_capped(response, words, limit)
    except PackError:
        raise
    except httpx.TooManyRedirects:
        raise PackError(_(words["redirect"]) % {"count": MAX_REDIRECTS, "reason": ""}) from None
    except (httpx.HTTPError, httpx.InvalidURL, EgressRefused, OSError) as error:
        raise PackError(_(words["failed"]) % {"reason": outbound.failure_reason(error)}) from None


def _check_status(response: httpx.Response, words: dict[str, str]) -> None:
    if response.is_redirect:
        reason = outbound.status_reason(response.status_code)
        raise PackError(_(words["redirect"]) % {"reason": reason, "count": MAX_REDIRECTS})
    if response.status_code != 200:
        raise PackError(_(words["failed"]) % {"reason": outbound.status_reason(response.status_code)})


def _read_capped(response: httpx.Response, words: dict[str, str], limit: int) -> bytes:
    """The body, stopped as soon as it passes `limit` (a declared Content-Length past it first)."""
    too_large = PackError(_(words["large"]) % {"limit": _megabytes(limit)})
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks, total = [], 0
    for chunk in response.iter_bytes():
        total += len(chunk)
        if total > limit:
            raise too_large
        chunks.append(chunk)
    return b"".join(chunks)


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):g}"


def _http_url(url: str) -> bool:
    """An absolute http(s) URL with a host (the policy itself is checked when connecting)."""
    try:
        parts = urlsplit(url or "")
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)
