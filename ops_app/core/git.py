"""Reading files from a remote Git repository for an organization: the vault's Git sync
(`ops_app.knowledge.git_sync`) and packs fetched from Git (`agents_app.packs.sources`).

Why it is built this way:

- The system `git`, run with a list argv (no shell), a hard timeout (its whole process group
  killed, so git-remote-https and ssh die with it), no prompts, no system or user configuration,
  no hooks, no submodules, no redirects, and only the one transport the URL names (https, http or
  ssh; never file://, git://, ext:: or a local path).
- The egress policy (`ops_app.core.egress`) applies as it does to every other request made for an
  organization: the host is resolved here, the address checked, and git is pinned to that address
  (`http.curloptResolve` for HTTP(S); `HostName=<address>` with `HostKeyAlias=<name>` for SSH), so a
  DNS answer that changes between the check and the connection changes nothing.
- Secrets never reach argv, the repository's config or an error: a token travels as an HTTP
  header in git's environment (`GIT_CONFIG_COUNT`), a deploy key in a 0600 file of a temporary
  directory removed after the run. Errors are fixed words and git's exit status, never git's
  output (what a remote server answers is never echoed back).
- Files are read from Git objects (`ls-tree` + `cat-file --batch`), never checked out, so a
  symlink or a submodule in the repository can point nowhere on this machine.

Knows nothing of the vault, packs or models: the callers bring the URL, the credentials and the
directory of the bare repository.
"""

from __future__ import annotations

import base64
import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import quote, urlsplit

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from ops_app.core import egress, outbound
from ops_app.core.egress import EgressRefused

GIT = "git"
GIT_TIMEOUT = 120  # seconds, for each git command
BLOB_MODES = {"100644", "100755"}  # regular files; 120000 (symlinks) and 160000 (submodules) are not
SSH_USER = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# A branch or tag name git accepts (git check-ref-format), without the forms that read as options.
REF = re.compile(r"^(?!-)(?!/)(?!.*(\.\.|//|@\{|\.lock$|/$|\.$))[A-Za-z0-9._/-]{1,200}$")
SCP_LIKE = re.compile(
    r"^(?P<user>[A-Za-z0-9._-]+)@(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(?P<path>[^/].*)$"
)
SAFE_PATH = re.compile(r"^[\w.~/+-]*$")
MISSING_REF = gettext_noop("the branch does not exist")


class GitError(Exception):
    """A Git operation that failed, in fixed words (safe to show and to store). `reason` is the
    untranslated reason found in git's output (e.g. MISSING_REF), `status` git's exit status."""

    def __init__(self, message: str, reason: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.reason, self.status = reason, status


@dataclass(frozen=True)
class Remote:
    """Where a repository URL points: its transport, host, port, SSH user and path."""

    scheme: str  # "https", "http" or "ssh"
    host: str
    port: int
    path: str
    user: str = ""


@dataclass(frozen=True)
class Credentials:
    """How git authenticates: an access token (HTTP(S)), or an SSH deploy key with the server's
    known hosts lines. Empty fields: anonymous."""

    token: str = field(default="", repr=False)
    ssh_private_key: str = field(default="", repr=False)
    ssh_known_hosts: str = ""


@dataclass(frozen=True)
class TreeEntry:
    """One entry of `ls-tree -r -l`: a regular file, or a symlink or submodule (never read)."""

    path: str
    mode: str
    kind: str  # "blob" or "commit" (a submodule)
    sha: str
    size: int  # 0 for a submodule

    @property
    def regular(self) -> bool:
        return self.kind == "blob" and self.mode in BLOB_MODES


# --- the URL, the ref and the path ----------------------------------------------------------------


def parse_remote(url: str) -> Remote:
    """The repository URL's parts, or GitError: https://, http://, ssh:// or `user@host:path`;
    never credentials inside the URL, a local path or another transport."""
    url = (url or "").strip()
    if not url or egress.UNSAFE_CHARACTERS.search(url) or url.startswith("-"):
        raise GitError(_("the repository URL is malformed"))
    scp = SCP_LIKE.match(url)
    if scp is not None and "://" not in url:
        return _remote("ssh", scp["user"], scp["host"], None, scp["path"])
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise GitError(_("the repository URL is malformed")) from None
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http", "ssh"):
        raise GitError(_("only https, http and ssh repository URLs are allowed"))
    if parts.password is not None or (scheme != "ssh" and "@" in parts.netloc):
        raise GitError(_("the URL holds a user name or password; use the authentication fields instead"))
    if parts.query or parts.fragment:
        raise GitError(_("the repository URL has no query (?) or fragment (#)"))
    return _remote(scheme, parts.username or "", parts.hostname or "", port, parts.path.lstrip("/"))


def _remote(scheme: str, user: str, host: str, port: int | None, path: str) -> Remote:
    host = egress.normalise_host(host)
    if not host or host.startswith("-") or not (egress.HOST_NAME.match(host) or egress.literal_address(host)):
        raise GitError(_("the repository URL has no valid host"))
    if user and not SSH_USER.match(user):
        raise GitError(_("the repository URL's user name is not valid"))
    if not path or not SAFE_PATH.match(path) or ".." in PurePosixPath(path).parts:
        raise GitError(_("the repository URL has no valid path"))
    return Remote(scheme, host, port or {"https": 443, "http": 80, "ssh": 22}[scheme], path, user)


def url_refusal(url: str) -> str | None:
    """Why `url` cannot be a repository URL now (its form, or the egress policy), in the active
    language; None when it is acceptable. What a form shows when a URL is saved."""
    try:
        remote = parse_remote(url)
    except GitError as error:
        return str(error)
    if remote.scheme == "ssh":  # the policy is the same for every transport: check it as https
        return outbound.refusal(f"https://{_netloc(remote.host)}:{remote.port}/")
    return outbound.refusal(url)


def ref_refusal(ref: str) -> str | None:
    """Why `ref` cannot be a branch or tag name (None when it can): git's rules, no option-like
    or climbing forms."""
    if not REF.match(ref or ""):
        return _("not a valid branch or tag name")
    return None


def normalised_path(path: str) -> str:
    """The folder inside the repository, without leading or trailing slashes ("" for all), or
    GitError for one that climbs out (`..`)."""
    clean = (path or "").strip().strip("/")
    if clean and (not SAFE_PATH.match(clean) or ".." in PurePosixPath(clean).parts):
        raise GitError(_("the path inside the repository is not valid"))
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


def checked_address(remote: Remote) -> egress.IPAddress:
    """The address git connects to: the host resolved once here and checked by the policy."""
    try:
        return egress.checked_addresses(remote.host, remote.port, outbound.allowed())[0]
    except EgressRefused as refused:
        raise GitError(_("refused by the egress policy: %(reason)s") % {"reason": refused.reason}) from None
    except (OSError, IndexError):
        raise GitError(_("the host name does not resolve")) from None


# --- running git ----------------------------------------------------------------------------------


@dataclass
class Runner:
    """The argv prefix and environment of every git command of one operation."""

    git_dir: Path
    options: list[str]
    env: dict[str, str] = field(repr=False)
    timeout: float = GIT_TIMEOUT

    def run(self, *args: str, stdin: bytes | None = None, what: str) -> bytes:
        """git's stdout, or GitError naming `what` failed, with a fixed reason and the exit status.

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
            raise GitError(_("git is not installed on the server")) from None
        with process:
            try:
                stdout, stderr = process.communicate(stdin, timeout=self.timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.communicate()
                values = {"what": what, "seconds": self.timeout}
                raise GitError(_("%(what)s timed out after %(seconds)s s") % values) from None
        if process.returncode != 0:
            reason = _reason(stderr)
            values = {"what": what, "reason": _(reason), "status": process.returncode}
            raise GitError(
                _("%(what)s failed: %(reason)s (git exit status %(status)s)") % values,
                reason=reason,
                status=process.returncode,
            )
        return stdout


# What git's output says, matched here and reported in our own words (never git's); gettext_noop
# by its own name, so makemessages finds the words.
_REASONS = (
    (("authentication failed", "http 401", "http 403", "returned error: 401", "returned error: 403",
      "permission denied", "could not read username"), gettext_noop("authentication failed")),
    (("host key verification failed", "no matching host key", "remote host identification has changed"),
     gettext_noop("the server's host key is not the one in the known hosts")),
    (("couldn't find remote ref", "could not find remote branch"), MISSING_REF),
    (("not found", "does not appear to be a git repository", "returned error: 404"),
     gettext_noop("the repository was not found")),
    (("could not resolve host", "name or service not known"), gettext_noop("the host name does not resolve")),
    (("connection refused", "failed to connect", "couldn't connect"),
     gettext_noop("the connection was refused")),
    (("timed out", "timeout"), gettext_noop("the connection timed out")),
    (("ssl", "certificate", "tls"), gettext_noop("the TLS handshake or certificate failed")),
    (("redirect",), gettext_noop("the server redirects elsewhere, which is not followed")),
)  # fmt: skip
_OTHER = gettext_noop("the server refused or the transfer failed")


def _reason(stderr: bytes) -> str:
    """The untranslated reason git's error output shows."""
    text = stderr.decode("utf-8", "replace").lower()
    for markers, words in _REASONS:
        if any(marker in text for marker in markers):
            return words
    return _OTHER


@contextlib.contextmanager
def runner(
    remote: Remote,
    address: egress.IPAddress,
    credentials: Credentials,
    git_dir: Path,
    timeout: float = GIT_TIMEOUT,
) -> Iterator[Runner]:
    """A git runner for the repository in `git_dir`, pinned to `address`, with its credential in
    a private temporary directory (also git's HOME) that is removed afterwards."""
    scratch = Path(tempfile.mkdtemp(prefix="ongrid-git-"))
    try:
        os.chmod(scratch, 0o700)
        env = _environment(remote, scratch)
        options = _options(remote)
        if remote.scheme == "ssh":
            env["GIT_SSH_COMMAND"] = _ssh_command(credentials, remote, address, scratch)
            env["GIT_SSH_VARIANT"] = "ssh"
        else:
            pinned = f"[{address}]" if address.version == 6 else str(address)
            options += ["-c", f"http.curloptResolve={remote.host}:{remote.port}:{pinned}"]
            if credentials.token:
                env.update(_token_header(credentials.token))
        yield Runner(git_dir, options, env, timeout)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _environment(remote: Remote, scratch: Path) -> dict[str, str]:
    return {
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


def _options(remote: Remote) -> list[str]:
    return [
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


def _ssh_command(credentials: Credentials, remote: Remote, address: egress.IPAddress, scratch: Path) -> str:
    """The ssh git runs: to the checked address, the host key checked against the configured known
    hosts under the URL's name, only the deploy key, no agent, no config, no forwarding."""
    if not credentials.ssh_private_key:
        raise GitError(_("an SSH URL needs an SSH deploy key"))
    if not credentials.ssh_known_hosts.strip():
        raise GitError(_("an SSH URL needs the server's known hosts line"))
    key = scratch / "deploy_key"
    key.touch(mode=0o600)
    key.write_text(credentials.ssh_private_key.strip() + "\n")
    known = scratch / "known_hosts"
    known.write_text(credentials.ssh_known_hosts.strip() + "\n")
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


# --- the operations -------------------------------------------------------------------------------


def ensure_bare(git: Runner) -> None:
    """A bare repository (no work tree) in the runner's directory, created on first use."""
    if (git.git_dir / "HEAD").exists():
        return
    git.git_dir.mkdir(parents=True, exist_ok=True)
    git.run("init", "--quiet", "--bare", what=_("preparing the local copy"))


def fetch_branch(git: Runner, url: str, branch: str, into: str) -> str:
    """The branch's last commit fetched shallowly to the local ref `into`; its id."""
    _fetch(git, url, f"refs/heads/{branch}", into, what=_("fetching the branch"))
    return commit_of(git, into)


def fetch_ref(git: Runner, url: str, ref: str, into: str) -> str:
    """`ref` fetched shallowly to the local ref `into`, as a branch or else as a tag (git resolves
    neither on its own for a fetch by name); the commit's id."""
    what = _("fetching the branch or tag")
    try:
        _fetch(git, url, f"refs/heads/{ref}", into, what=what)
    except GitError as error:
        if error.reason != MISSING_REF:
            raise
        try:
            _fetch(git, url, f"refs/tags/{ref}", into, what=what)
        except GitError as again:
            if again.reason != MISSING_REF:
                raise
            values = {"what": what, "reason": _("no branch or tag has that name"), "status": again.status}
            message = _("%(what)s failed: %(reason)s (git exit status %(status)s)") % values
            raise GitError(message, reason=MISSING_REF, status=again.status) from None
    return commit_of(git, into)


def _fetch(git: Runner, url: str, source: str, into: str, what: str) -> None:
    git.run(
        "fetch", "--quiet", "--depth=1", "--no-tags", "--no-recurse-submodules", "--no-write-fetch-head",
        "--", url, f"+{source}:{into}",
        what=what,
    )  # fmt: skip


def commit_of(git: Runner, ref: str) -> str:
    """The id of the commit the local `ref` points to (through an annotated tag)."""
    commit = git.run("rev-parse", "--verify", f"{ref}^{{commit}}", what=_("reading the commit"))
    return commit.decode().strip()


def list_tree(git: Runner, ref: str, folder: str = "") -> list[TreeEntry]:
    """Every file under `folder` at `ref`, in Git's order, with its mode (regular file, symlink)
    or kind (submodule) and size, so the caller decides what to read and what to report."""
    listing = git.run(
        "ls-tree", "-r", "-l", "-z", "--full-tree", ref, *(["--", folder] if folder else []),
        what=_("listing the files"),
    )  # fmt: skip
    entries = []
    for raw in listing.split(b"\0"):
        if not raw:
            continue
        meta, _tab, raw_path = raw.partition(b"\t")
        mode, kind, sha, size = meta.decode().split()
        path = raw_path.decode("utf-8", "replace")
        if not folder or path.startswith(folder + "/"):
            entries.append(TreeEntry(path, mode, kind, sha, int(size) if size.isdigit() else 0))
    return entries


def read_blobs(git: Runner, shas: list[str]) -> dict[str, bytes]:
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
