"""Vault sync from Git (docs/knowledge.md, "Git sync"): an organization's runbooks pulled from a
repository, each Markdown file under the configured path a `repository` document.

Why it is built this way:

- The system `git`, run with a list argv (no shell), a hard timeout, no prompts, no system or user
  configuration, no hooks, no submodules, no redirects, and only the one transport the URL names
  (https, http or ssh; never file://, git://, ext:: or a local path).
- The egress policy (`ops_app.core.egress`) applies as it does to every other request made for an
  organization: the host is resolved here, the address checked, and git is pinned to that address
  (`http.curloptResolve` for HTTP(S); `HostName=<address>` with `HostKeyAlias=<name>` for SSH), so a
  DNS answer that changes between the check and the connection changes nothing.
- Secrets never reach argv, `.git/config`, the log or `last_error`: a token travels as an HTTP
  header in git's environment (`GIT_CONFIG_COUNT`), a deploy key in a 0600 file of a temporary
  directory removed after the run. `last_error` is fixed words and git's exit status, never git's
  output.
- Files are read from Git objects (`ls-tree` + `cat-file --batch`), never checked out, so a
  symlink or a submodule in the repository can point nowhere on this machine.
- One sync per repository at a time: `sync_claimed_until` is claimed by compare-and-set.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from urllib.parse import quote, urlsplit

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from ops_app.core import egress, loops, outbound
from ops_app.core.egress import EgressRefused
from ops_app.knowledge import vault
from ops_app.models import KnowledgeDocument, VaultRepository

log = logging.getLogger(__name__)

GIT = "git"
GIT_TIMEOUT = 120  # seconds, for each git command
LEASE = timedelta(minutes=10)  # longer than a fetch's timeout plus the indexing of its files
MARKDOWN_SUFFIXES = (".md", ".markdown")
MAX_FILE_BYTES = vault.MAX_UPLOAD_BYTES
MAX_FILES = 2000
LFS_POINTER = "version https://git-lfs.github.com/spec/"
MAX_TOTAL_BYTES = 64 * 1024 * 1024  # what one sync reads into memory
BLOB_MODES = {"100644", "100755"}  # regular files; 120000 (symlinks) and 160000 (submodules) skipped
SSH_USER = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
BRANCH = re.compile(r"^(?!-)(?!/)(?!.*(\.\.|//|@\{|\.lock$|/$|\.$))[A-Za-z0-9._/-]{1,200}$")
SCP_LIKE = re.compile(
    r"^(?P<user>[A-Za-z0-9._-]+)@(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(?P<path>[^/].*)$"
)
SAFE_PATH = re.compile(r"^[\w.~/+-]*$")


class SyncError(Exception):
    """A sync that failed, in fixed words (safe to show and to store in `last_error`)."""


@dataclass(frozen=True)
class Remote:
    """Where a repository URL points: its transport, host, port, SSH user and path."""

    scheme: str  # "https", "http" or "ssh"
    host: str
    port: int
    path: str
    user: str = ""


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


# --- the URL --------------------------------------------------------------------------------------


def parse_remote(url: str) -> Remote:
    """The repository URL's parts, or SyncError: https://, http://, ssh:// or `user@host:path`;
    never credentials inside the URL, a local path or another transport."""
    url = (url or "").strip()
    if not url or egress.UNSAFE_CHARACTERS.search(url) or url.startswith("-"):
        raise SyncError(_("the repository URL is malformed"))
    scp = SCP_LIKE.match(url)
    if scp is not None and "://" not in url:
        return _remote("ssh", scp["user"], scp["host"], None, scp["path"])
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise SyncError(_("the repository URL is malformed")) from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http", "ssh"):
        raise SyncError(_("only https, http and ssh repository URLs are allowed"))
    if parts.password is not None or (scheme != "ssh" and "@" in parts.netloc):
        raise SyncError(_("the URL holds a user name or password; use the authentication fields instead"))
    if parts.query or parts.fragment:
        raise SyncError(_("the repository URL has no query (?) or fragment (#)"))
    return _remote(scheme, parts.username or "", parts.hostname or "", port, parts.path.lstrip("/"))


def _remote(scheme: str, user: str, host: str, port: int | None, path: str) -> Remote:
    host = egress.normalise_host(host)
    if not host or host.startswith("-") or not (egress.HOST_NAME.match(host) or egress.literal_address(host)):
        raise SyncError(_("the repository URL has no valid host"))
    if user and not SSH_USER.match(user):
        raise SyncError(_("the repository URL's user name is not valid"))
    if not path or not SAFE_PATH.match(path) or ".." in PurePosixPath(path).parts:
        raise SyncError(_("the repository URL has no valid path"))
    return Remote(scheme, host, port or {"https": 443, "http": 80, "ssh": 22}[scheme], path, user)


def url_refusal(url: str) -> str | None:
    """Why `url` cannot be a repository URL now (its form, or the egress policy), in the active
    language; None when it is acceptable. What the admin form shows when a URL is saved."""
    try:
        remote = parse_remote(url)
    except SyncError as error:
        return str(error)
    if remote.scheme == "ssh":  # the policy is the same for every transport: check it as https
        return outbound.refusal(f"https://{_netloc(remote.host)}:{remote.port}/")
    return outbound.refusal(url)


def branch_refusal(branch: str) -> str | None:
    if not BRANCH.match(branch or ""):
        return _("not a valid branch name")
    return None


def normalised_path(path: str) -> str:
    """The folder inside the repository, without leading or trailing slashes ("" for all), or
    SyncError for one that climbs out (`..`)."""
    clean = (path or "").strip().strip("/")
    if clean and (not SAFE_PATH.match(clean) or ".." in PurePosixPath(clean).parts):
        raise SyncError(_("the path inside the repository is not valid"))
    return clean


def browse_url(remote: Remote, branch: str, file_path: str) -> str:
    """A link to the file on GitHub or GitLab (their page layout is known); blank elsewhere."""
    project = remote.path.removesuffix(".git").strip("/")
    where = f"{quote(branch)}/{quote(file_path)}"
    if "github" in remote.host:
        return f"https://{remote.host}/{project}/blob/{where}"
    if "gitlab" in remote.host:
        return f"https://{remote.host}/{project}/-/blob/{where}"
    return ""


def _netloc(host: str) -> str:
    return f"[{host}]" if ":" in host else host


# --- running git ----------------------------------------------------------------------------------


def repository_dir(repo: VaultRepository) -> Path:
    """Where the repository's objects are kept between syncs (a bare repository, no work tree)."""
    return settings.CONFIG.data_dir / "vault-repositories" / str(repo.organization_id) / str(repo.pk)


@dataclass
class _Git:
    """The argv prefix and environment of every git command of one sync."""

    git_dir: Path
    options: list[str]
    env: dict[str, str] = field(repr=False)

    def run(self, *args: str, stdin: bytes | None = None, what: str) -> bytes:
        """git's stdout, or SyncError naming `what` failed, with a fixed reason and the exit status.

        git runs in its own process group, killed whole at the timeout: its helpers
        (git-remote-https, ssh) would otherwise outlive it."""
        argv = [GIT, f"--git-dir={self.git_dir}", *self.options, *args]
        try:
            process = subprocess.Popen(  # noqa: S603 - a list argv, no shell
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self.env,
                start_new_session=True,
            )
        except OSError:
            raise SyncError(_("git is not installed on the server")) from None
        with process:
            try:
                stdout, stderr = process.communicate(stdin, timeout=GIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                values = {"what": what, "seconds": GIT_TIMEOUT}
                raise SyncError(_("%(what)s timed out after %(seconds)s s") % values) from None
        if process.returncode != 0:
            values = {"what": what, "reason": _reason(stderr), "status": process.returncode}
            raise SyncError(_("%(what)s failed: %(reason)s (git exit status %(status)s)") % values)
        return stdout


# What git's output says, matched here and reported in our own words (never git's).
N_ = gettext_noop
_REASONS = (
    (("authentication failed", "http 401", "http 403", "returned error: 401", "returned error: 403",
      "permission denied", "could not read username"), N_("authentication failed")),
    (("host key verification failed", "no matching host key", "remote host identification has changed"),
     N_("the server's host key is not the one in the known hosts")),
    (("couldn't find remote ref", "could not find remote branch"), N_("the branch does not exist")),
    (("not found", "does not appear to be a git repository", "returned error: 404"),
     N_("the repository was not found")),
    (("could not resolve host", "name or service not known"), N_("the host name does not resolve")),
    (("connection refused", "failed to connect", "couldn't connect"), N_("the connection was refused")),
    (("timed out", "timeout"), N_("the connection timed out")),
    (("ssl", "certificate", "tls"), N_("the TLS handshake or certificate failed")),
    (("redirect",), N_("the server redirects elsewhere, which is not followed")),
)  # fmt: skip


def _reason(stderr: bytes) -> str:
    text = stderr.decode("utf-8", "replace").lower()
    for markers, words in _REASONS:
        if any(marker in text for marker in markers):
            return _(words)
    return _("the server refused or the transfer failed")


@contextlib.contextmanager
def _git_for(repo: VaultRepository, remote: Remote, address: egress.IPAddress) -> Iterator[_Git]:
    """A git runner for `repo` pinned to `address`, with its credential in a private temporary
    directory (also git's HOME) that is removed afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="ongrid-git-"))
    try:
        os.chmod(scratch, 0o700)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(scratch),
            "LC_ALL": "C",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ASKPASS": "/bin/false",
            "SSH_ASKPASS": "/bin/false",
            "GIT_ALLOW_PROTOCOL": remote.scheme,
            "GIT_LFS_SKIP_SMUDGE": "1",
            "GIT_CONFIG_COUNT": "0",
        }
        options = [
            "-c", "core.hooksPath=/dev/null",
            "-c", "core.fsmonitor=false",
            "-c", "protocol.allow=never",
            "-c", f"protocol.{remote.scheme}.allow=always",
            "-c", "http.followRedirects=false",
            "-c", "http.lowSpeedLimit=1000",
            "-c", "http.lowSpeedTime=30",
            "-c", "credential.helper=",
            "-c", "submodule.recurse=false",
            "-c", "fetch.recurseSubmodules=false",
            "-c", "gc.auto=0",
            "-c", "maintenance.auto=false",
            "-c", "transfer.fsckObjects=true",
        ]  # fmt: skip
        if remote.scheme == "ssh":
            env["GIT_SSH_COMMAND"] = _ssh_command(repo, remote, address, scratch)
            env["GIT_SSH_VARIANT"] = "ssh"
        else:
            pinned = f"[{address}]" if address.version == 6 else str(address)
            options += ["-c", f"http.curloptResolve={remote.host}:{remote.port}:{pinned}"]
            if repo.auth == VaultRepository.Auth.TOKEN and repo.token:
                env.update(_token_header(repo.token))
        yield _Git(repository_dir(repo), options, env)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _token_header(token: str) -> dict[str, str]:
    """The token as git's `http.extraHeader`, through the environment: Basic auth with the user
    `x-access-token` (GitHub, GitLab and Gitea take any user with a token), or the user given as
    `user:token` (a GitLab deploy token's user name)."""
    user, colon, secret = token.strip().partition(":")
    user, secret = (user, secret) if colon else ("x-access-token", user)
    basic = base64.b64encode(f"{user}:{secret}".encode()).decode()
    return {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "http.extraHeader",
        "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
    }


def _ssh_command(repo: VaultRepository, remote: Remote, address: egress.IPAddress, scratch: Path) -> str:
    """The ssh git runs: to the checked address, the host key checked against the configured known
    hosts under the URL's name, only the deploy key, no agent, no config, no forwarding."""
    if repo.auth != VaultRepository.Auth.SSH_KEY or not repo.ssh_private_key:
        raise SyncError(_("an SSH URL needs an SSH deploy key"))
    if not repo.ssh_known_hosts.strip():
        raise SyncError(_("an SSH URL needs the server's known hosts line"))
    key = scratch / "deploy_key"
    key.touch(mode=0o600)
    key.write_text(repo.ssh_private_key.strip() + "\n")
    known = scratch / "known_hosts"
    known.write_text(repo.ssh_known_hosts.strip() + "\n")
    # The name a known_hosts line gives a server on another port is `[host]:port` (ssh-keyscan -p).
    alias = remote.host if remote.port == 22 else f"[{remote.host}]:{remote.port}"
    argv = [
        "ssh", "-F", os.devnull,
        "-o", "BatchMode=yes",
        "-o", "StrictHostKeyChecking=yes",
        "-o", f"UserKnownHostsFile={known}",
        "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", f"HostKeyAlias={alias}",
        "-o", f"HostName={address}",
        "-o", "CheckHostIP=no",
        "-o", "UpdateHostKeys=no",
        "-o", "IdentitiesOnly=yes",
        "-o", f"IdentityFile={key}",
        "-o", "IdentityAgent=none",
        "-o", "ProxyCommand=none",
        "-o", "ProxyJump=none",
        "-o", "PermitLocalCommand=no",
        "-o", "ClearAllForwardings=yes",
        "-o", "ConnectTimeout=20",
    ]  # fmt: skip
    return shlex.join(argv)


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
    address = _checked_address(remote)
    with _git_for(repo, remote, address) as git:
        _ensure_bare(git)
        git.run(
            "fetch", "--quiet", "--depth=1", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head",
            "--", repo.url, f"+refs/heads/{repo.branch}:refs/ongrid/synced",
            what=_("fetching the branch"),
        )  # fmt: skip
        commit = git.run("rev-parse", "--verify", "refs/ongrid/synced^{commit}", what=_("reading the commit"))
        report.commit = commit.decode().strip()
        files = _markdown_files(git, report, folder)
        if not files:
            raise SyncError(_("no Markdown files under the path %(path)s") % {"path": folder or "/"})
        contents = _read_blobs(git, [sha for _path, sha in files])
    _mirror(repo, remote, report, folder, files, contents)


def _checked_address(remote: Remote) -> egress.IPAddress:
    """The address git connects to: the host resolved once here and checked by the policy."""
    try:
        return egress.checked_addresses(remote.host, remote.port, outbound.allowed())[0]
    except EgressRefused as refused:
        raise SyncError(_("refused by the egress policy: %(reason)s") % {"reason": refused.reason}) from None
    except (OSError, IndexError):
        raise SyncError(_("the host name does not resolve")) from None


def _ensure_bare(git: _Git) -> None:
    if (git.git_dir / "HEAD").exists():
        return
    git.git_dir.mkdir(parents=True, exist_ok=True)
    git.run("init", "--quiet", "--bare", what=_("preparing the local copy"))


def _markdown_files(git: _Git, report: SyncReport, folder: str) -> list[tuple[str, str]]:
    """(path, blob id) of each Markdown file under `folder` at the synced commit; symlinks,
    submodules, oversized files and files past MAX_FILES are skipped (and named in the report)."""
    listing = git.run(
        "ls-tree", "-r", "-l", "-z", "--full-tree", "refs/ongrid/synced", *(["--", folder] if folder else []),
        what=_("listing the files"),
    )  # fmt: skip
    files, total = [], 0
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _tab, raw_path = entry.partition(b"\t")
        mode, kind, sha, size = meta.decode().split()
        path = raw_path.decode("utf-8", "replace")
        inside = not folder or path.startswith(folder + "/")
        if not inside or not path.lower().endswith(MARKDOWN_SUFFIXES):
            continue
        if kind != "blob" or mode not in BLOB_MODES:
            report.skipped.append(f"{path}: not a regular file")
        elif int(size) > MAX_FILE_BYTES:
            report.skipped.append(f"{path}: larger than {MAX_FILE_BYTES} bytes")
        elif len(files) >= MAX_FILES or total + int(size) > MAX_TOTAL_BYTES:
            report.skipped.append(f"{path}: past the limit of {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes")
        else:
            files.append((path, sha))
            total += int(size)
    return files


def _read_blobs(git: _Git, shas: list[str]) -> dict[str, bytes]:
    """The blobs' contents from one `git cat-file --batch`."""
    output = git.run(
        "cat-file", "--batch", stdin="".join(f"{sha}\n" for sha in shas).encode(), what=_("reading the files")
    )
    contents, offset = {}, 0
    for _sha in shas:
        end = output.index(b"\n", offset)
        sha, kind, size = output[offset:end].decode().split()
        start = end + 1
        contents[sha] = output[start : start + int(size)]
        offset = start + int(size) + 1
    return contents


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
