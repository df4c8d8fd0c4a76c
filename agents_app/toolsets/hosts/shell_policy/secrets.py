"""Secret stores, refused on every transport whatever the program.

Paths are compared in their textual normal form (`//`, `.` and `..` resolved), so a spelling
trick cannot reach a shadow file or a private key; over SSH nothing better is possible, since
the remote file system cannot be consulted before the command runs. Recursive content searches
are also kept out of the places where secrets live in bulk (/proc, /etc/ssh, homes...).
"""

from __future__ import annotations

import posixpath
import re

from .refusal import PolicyRefusal

# Words that name secret stores whatever the path (kept from the first version of the policy).
SENSITIVE_ARGUMENTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"environ"), "process environments hold secrets"),
    (re.compile(r"secret|password|credential", re.IGNORECASE), "this looks like a secret store"),
)

_KEY_WHY = "private keys are secrets"
_SSH_KEY_WHY = "private SSH keys are secrets"
_CRED_WHY = "credential files are secrets"
# Patterns over the normalised path (absolute paths stay absolute, `//` and `..` are resolved).
SECRET_PATHS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(^|/)[^/]*shadow[^/]*$"), "password hashes are secrets (shadow files and their backups)"),
    (re.compile(r"(^|/)\.?htpasswd[^/]*$|(^|/)etc/security/opasswd$"), "password hashes are secrets"),
    (re.compile(r"(^|/)id_(rsa|dsa|ecdsa|ed25519)(_sk)?(?![^/]*\.pub$)[^/]*$"), _SSH_KEY_WHY),
    (re.compile(r"(^|/)ssh_host_[^/]*key(?!\.pub$)[^/]*$"), _SSH_KEY_WHY),
    (re.compile(r"^/etc/ssh/[^/]*key[^/]*$"), _SSH_KEY_WHY),
    (re.compile(r"(^|/)[^/]*(privkey|private[-_.]?key|deploy[-_]?key)[^/]*$", re.IGNORECASE), _KEY_WHY),
    (re.compile(r"(^|/)[^/]*(\.key|key\.pem|\.p12|\.pfx|\.jks|\.keystore|\.kdbx)$", re.IGNORECASE), _KEY_WHY),
    (re.compile(r"(^|/)ssl/private(/|$)|(^|/)\.gnupg(/|$)|(^|/)etc/kubernetes/pki(/|$)"), _KEY_WHY),
    (re.compile(r"(^|/)\.kube(/|$)|(^|/)etc/kubernetes/[^/]*\.conf$"), "cluster credentials are secrets"),
    (
        re.compile(
            r"(^|/)\.docker/config\.json$|(^|/)\.aws(/|$)|(^|/)\.config/gcloud(/|$)|(^|/)\.azure(/|$)"
        ),
        "cloud and registry credentials are secrets",
    ),  # fmt: skip
    (
        re.compile(r"(^|/)etc/mysql/debian\.cnf$|(^|/)\.my\.cnf$|(^|/)\.mylogin\.cnf$|(^|/)\.pgpass$"),
        "database client configurations hold passwords",
    ),  # fmt: skip
    (
        re.compile(r"(^|/)\.netrc$|(^|/)\.git-credentials$|(^|/)\.vault-token$|(^|/)\.env(\.[^/]*)?$"),
        _CRED_WHY,
    ),
    (
        re.compile(
            r"^/proc/[^/]+(/task/[^/]+)?/(environ|root|cwd|fd|fdinfo|map_files|mem)(/|$)|^/dev/fd(/|$)"
        ),
        "process environments, memory and file descriptors hold secrets",
    ),  # fmt: skip
    (re.compile(r"^/dev/(k?mem|port|std(in|out|err))$"), "this device exposes memory or another stream"),
)

# Recursive searches of file contents may not cover these (nor start inside them).
RECURSIVE_DENIED = ("/proc", "/sys", "/dev", "/etc/ssh", "/etc/ssl/private", "/etc/mysql", "/etc/kubernetes",
                    "/root", "/var/backups", "/run", "/home")  # fmt: skip
_HOME = re.compile(r"^/home(/[^/]+)?$")


def normalise(path: str, cwd: str = "/") -> str:
    """The textual normal form of a path argument: `//`, `.` and `..` resolved; relative paths
    count from `cwd` (the local transport runs commands in /). No file system access."""
    joined = posixpath.join(cwd, path) if cwd else path
    normal = posixpath.normpath(re.sub("/+", "/", joined))
    return "/" + normal.lstrip("/") if normal.startswith("/") else normal


def inside(path: str, root: str) -> bool:
    """Whether `path` is `root` or below it, by whole path components (`/etc2` is not in `/etc`)."""
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def check_secret_word(word: str) -> None:
    """Refuse a word naming a secret store, as written and in its normal form; a word starting
    with `/` or `.` is also resolved from / (where the local transport runs), so anchored rules
    such as /etc/ssh's keys also catch `../etc/ssh/...`."""
    for pattern, why in SENSITIVE_ARGUMENTS:
        if pattern.search(word):
            raise PolicyRefusal(word, why)
    candidates = {word, normalise(word, cwd="")}
    if word.startswith("/") or word.startswith("."):
        candidates.add(normalise(word))
    for candidate in candidates:
        for pattern, why in SECRET_PATHS:
            if pattern.search(candidate):
                raise PolicyRefusal(word, why)


def check_recursive_root(program: str, root: str) -> None:
    """Refuse a recursive content search that would enter or start inside a secret-rich tree;
    a relative root must name a directory below the working directory."""
    relative = not root.startswith("/")
    normal = normalise(root, cwd="" if relative else "/")
    if relative and (normal == "." or normal.startswith("..")):
        raise PolicyRefusal(f"{program} -r {root}", "name the directory to search with an absolute path")
    if relative:
        return
    for denied in RECURSIVE_DENIED:
        covers = inside(denied, normal)  # the walk would enter `denied`
        within = inside(normal, denied) and (denied != "/home" or bool(_HOME.match(normal)))
        if covers or within:
            raise PolicyRefusal(
                f"{program} -r {root}",
                f"a recursive search of {normal} would read {denied} (process environments, keys, home "
                "folders); search a narrower directory",
            )
