"""Vault sync from Git (docs/knowledge.md, "Git sync"): an organization's runbooks pulled from a
repository, each Markdown file under the configured path a `repository` document.

Why it is built this way:

- Git itself is run by `ops_app.core.git` (shared with packs fetched from Git): the system `git`
  with a list argv, a hard timeout, no prompts, configuration, hooks, submodules or redirects, only
  the URL's transport, pinned to the address the egress policy checked, the token in git's
  environment and the deploy key in a temporary 0600 file, files read from Git objects and never
  checked out. See that module for each reason.
- The repository's objects are kept between syncs (`repository_dir`, a bare repository), so a
  sync fetches only what changed; deleting the repository removes them.
- Only Markdown files under the path are indexed; a symlink, a submodule, an oversized file, a
  file past the limits, a file that is not UTF-8 or a Git LFS pointer is skipped and named in the
  report.
- `last_error` is fixed words and git's exit status, never git's output, a token or a key.
- A failure keeps the documents already indexed; a file gone upstream removes its document, and
  uploads, vault runbooks and other repositories' documents are never touched.
- One sync per repository at a time: `sync_claimed_until` is claimed by compare-and-set.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _

from ops_app.core import git, loops
from ops_app.core.git import GitError as SyncError  # the vault's name for it (the admin catches it)
from ops_app.core.git import Remote, browse_url, normalised_path, parse_remote, url_refusal  # noqa: F401 - re-exported
from ops_app.knowledge import vault
from ops_app.models import KnowledgeDocument, VaultRepository

log = logging.getLogger(__name__)

GIT_TIMEOUT = git.GIT_TIMEOUT  # seconds, for each git command
LEASE = timedelta(minutes=10)  # longer than a fetch's timeout plus the indexing of its files
MARKDOWN_SUFFIXES = (".md", ".markdown")
MAX_FILE_BYTES = vault.MAX_UPLOAD_BYTES
MAX_FILES = 2000
LFS_POINTER = "version https://git-lfs.github.com/spec/"
MAX_TOTAL_BYTES = 64 * 1024 * 1024  # what one sync reads into memory
SYNCED_REF = "refs/ongrid/synced"


@dataclass
class SyncReport:
    """What one sync did: documents indexed, unchanged, removed, and files skipped (with why)."""

    status: str = "ok"  # "ok", "error" or "busy"
    commit: str = ""
    indexed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    error: str = ""

    def as_dict(self) -> dict:
        """The report stored in `last_report`: counts, and the names (at most 50 of each)."""
        lists = {"indexed": self.indexed, "unchanged": self.unchanged, "removed": self.removed}
        report: dict = {"status": self.status, "commit": self.commit, "error": self.error}
        for name, names in {**lists, "skipped": self.skipped}.items():
            report[f"{name}_count"] = len(names)
            report[name] = names[:50]
        return report


def branch_refusal(branch: str) -> str | None:
    """Why `branch` cannot be the branch synced (None when it can)."""
    if git.ref_refusal(branch):
        return _("not a valid branch name")
    return None


def repository_dir(repo: VaultRepository) -> Path:
    """Where the repository's objects are kept between syncs (a bare repository, no work tree)."""
    return settings.CONFIG.data_dir / "vault-repositories" / str(repo.organization_id) / str(repo.pk)


def credentials(repo: VaultRepository) -> git.Credentials:
    """The repository's credential for git: its token, or its deploy key (never both)."""
    if repo.auth == VaultRepository.Auth.TOKEN:
        return git.Credentials(token=repo.token or "")
    if repo.auth == VaultRepository.Auth.SSH_KEY:
        return git.Credentials(
            ssh_private_key=repo.ssh_private_key or "", ssh_known_hosts=repo.ssh_known_hosts or ""
        )
    return git.Credentials()


# --- one sync -------------------------------------------------------------------------------------


def claim(repo: VaultRepository, now: datetime | None = None) -> bool:
    """True if this caller won the repository's sync (compare-and-set on `sync_claimed_until`)."""
    now = now or timezone.now()
    free = Q(sync_claimed_until__isnull=True) | Q(sync_claimed_until__lt=now)
    return bool(VaultRepository.objects.filter(free, pk=repo.pk).update(sync_claimed_until=now + LEASE))


def sync_repository(repo: VaultRepository) -> dict:
    """Pull the repository's branch and mirror its Markdown files into the organization's
    `repository` documents; record the outcome on the row. Returns the report (`last_report`).

    A failure keeps the documents already indexed. Another process syncing the same repository
    makes this call return {"status": "busy"} without touching anything."""
    if not claim(repo):
        return {"status": "busy"}
    report = SyncReport()
    try:
        _sync(repo, report)
    except SyncError as error:
        report.status, report.error = "error", str(error)[:500]
        log.warning(
            "vault repository %s (organization %s): %s", repo.name, repo.organization_id, report.error
        )
    except Exception:  # noqa: BLE001 - the row must record the failure and release its claim
        report.status, report.error = "error", _("the sync failed unexpectedly")
        log.exception("vault repository %s (organization %s): sync failed", repo.name, repo.organization_id)
    finally:
        _record(repo, report)
    return report.as_dict()


def _record(repo: VaultRepository, report: SyncReport) -> None:
    values: dict = {
        "last_synced_at": timezone.now(),
        "last_error": report.error,
        "last_report": report.as_dict(),
        "sync_claimed_until": None,
    }
    if report.status == "ok":  # the commit the documents now reflect
        values["last_commit"] = report.commit
    VaultRepository.objects.filter(pk=repo.pk).update(**values)
    for name, value in values.items():
        setattr(repo, name, value)


def _sync(repo: VaultRepository, report: SyncReport) -> None:
    remote = parse_remote(repo.url)
    refused = branch_refusal(repo.branch)
    if refused:
        raise SyncError(refused)
    folder = normalised_path(repo.path)
    address = git.checked_address(remote)
    with git.runner(remote, address, credentials(repo), repository_dir(repo), timeout=GIT_TIMEOUT) as runner:
        git.ensure_bare(runner)
        report.commit = git.fetch_branch(runner, repo.url, repo.branch, SYNCED_REF)
        files = _markdown_files(git.list_tree(runner, SYNCED_REF, folder), report)
        if not files:
            raise SyncError(_("no Markdown files under the path %(path)s") % {"path": folder or "/"})
        contents = git.read_blobs(runner, [sha for _path, sha in files])
    _mirror(repo, remote, report, folder, files, contents)


def _markdown_files(entries: list[git.TreeEntry], report: SyncReport) -> list[tuple[str, str]]:
    """(path, blob id) of each Markdown file listed; symlinks, submodules, oversized files and
    files past MAX_FILES are skipped (and named in the report)."""
    files, total = [], 0
    for entry in entries:
        path = entry.path
        if not path.lower().endswith(MARKDOWN_SUFFIXES):
            continue
        if not entry.regular:
            report.skipped.append(f"{path}: not a regular file")
        elif entry.size > MAX_FILE_BYTES:
            report.skipped.append(f"{path}: larger than {MAX_FILE_BYTES} bytes")
        elif len(files) >= MAX_FILES or total + entry.size > MAX_TOTAL_BYTES:
            report.skipped.append(f"{path}: past the limit of {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes")
        else:
            files.append((path, entry.sha))
            total += entry.size
    return files


def _mirror(
    repo: VaultRepository,
    remote: Remote,
    report: SyncReport,
    folder: str,
    files: list[tuple[str, str]],
    contents: dict[str, bytes],
) -> None:
    """Index each file (unchanged text is a no-op) and remove this repository's documents whose
    file is gone; uploads, vault runbooks and other repositories' documents are never touched."""
    seen: set[str] = set()
    for path, sha in files:
        source = f"{repo.name}/{path}"
        try:
            raw = contents[sha].decode("utf-8-sig")
        except UnicodeDecodeError:
            report.skipped.append(f"{path}: not UTF-8 text")
            continue
        if raw.startswith(LFS_POINTER):
            report.skipped.append(f"{path}: a Git LFS pointer (LFS is not fetched)")
            continue
        seen.add(source)
        fallback = PurePosixPath(path).stem.replace("-", " ").replace("_", " ").capitalize()
        title, body = vault.title_of(raw, fallback=fallback)
        outcome = vault.ingest(
            repo.organization_id,
            kind=KnowledgeDocument.Source.REPOSITORY,
            source=source,
            title=title,
            content=body,
            url=browse_url(remote, repo.branch, path),
            repository_id=repo.pk,
        )
        (report.indexed if outcome["status"] == "indexed" else report.unchanged).append(path)
    stale = KnowledgeDocument.objects.filter(organization_id=repo.organization_id, repository_id=repo.pk)
    stale = stale.exclude(source__in=seen)
    prefix = f"{repo.name}/"
    report.removed = sorted(source.removeprefix(prefix) for source in stale.values_list("source", flat=True))
    stale.delete()


def forget_local_copy(sender=None, instance: VaultRepository | None = None, **kwargs) -> None:
    """A deleted repository's local copy goes too (its documents go by the foreign key's CASCADE)."""
    if instance is not None and instance.organization_id and instance.pk:
        shutil.rmtree(repository_dir(instance), ignore_errors=True)


# --- the schedule ---------------------------------------------------------------------------------


def due(now: datetime | None = None) -> list[VaultRepository]:
    """Enabled repositories on a schedule whose interval has passed since their last sync."""
    now = now or timezone.now()
    scheduled = VaultRepository.objects.filter(enabled=True, interval_minutes__gt=0)
    free = scheduled.filter(Q(sync_claimed_until__isnull=True) | Q(sync_claimed_until__lt=now))
    return [
        repo
        for repo in free.order_by("last_synced_at", "pk")
        if repo.last_synced_at is None
        or repo.last_synced_at + timedelta(minutes=repo.interval_minutes) <= now
    ]


def sync_due() -> int:
    """Sync every due repository, one after the other; the number synced."""
    synced = 0
    for repo in due():
        if sync_repository(repo).get("status") != "busy":
            synced += 1
    return synced


def should_run_embedded() -> bool:
    """Only without Celery: in the scale-out shape beat runs `ops_app.sync_vault_repositories`."""
    return settings.ONGRID_EXECUTOR == "inline"


LOOP_INTERVAL = 60.0  # seconds between looks for due repositories (intervals are in minutes)


async def sync_loop() -> None:
    """The embedded shape's schedule: due repositories synced on this process, for ever."""
    await loops.repeat("vault repository sync", sync_due, LOOP_INTERVAL)
