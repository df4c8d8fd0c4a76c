"""Secret stores, refused on every transport whatever the program.

Paths are compared in their textual normal form (`//`, `.` and `..` resolved), so a spelling
trick cannot reach a shadow file or a private key; over SSH nothing better is possible, since
the remote file system cannot be consulted before the command runs. The kernel resolves `..`
after following a link, not textually (`/var/run/..` is `/`, `/proc/net/..` is `/proc/self`),
so a path that climbs back is also read from / after its last `..`, and may not climb inside
/proc or /dev at all. Recursive content searches are also kept out of the places where secrets
live in bulk (/proc, /etc/ssh, homes...).
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

# Files that record what was typed: shells, database and language clients, less, vim (with its
# registers). Plain logs named after a history (`/var/log/apt/history.log`) are not among them.
_HISTORY = re.compile(
    r"(^|/)(\.(bash|zsh|sh|ash|ksh|mksh|mysql|psql|sqlite|python|rediscli|node_repl|irb|pry|php|cqlsh|influx)"
    r"_history|\.z?history|\.histfile|\.Rhistory|\.lesshst|\.viminfo|\.dbshell|fish_history"
    r"|mongosh_repl_history|\.clickhouse-client-history)[^/]*$"
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
    # /dev/core is a link to /proc/kcore on many distributions
    (re.compile(r"^/proc/(kcore|kmem)$|^/dev/core$"), "the kernel's memory image holds every secret"),
    (re.compile(r"^/dev/(k?mem|port|std(in|out|err))$"), "this device exposes memory or another stream"),
    (_HISTORY, "shell and client histories record typed command lines, passwords included"),
)

# Recursive searches of file contents may not cover these (nor start inside them).
# The database servers' folders are their accounts' homes too (`.psql_history`) and hold the servers'
# own password hashes.
RECURSIVE_DENIED = ("/proc", "/sys", "/dev", "/etc/ssh", "/etc/ssl/private", "/etc/mysql", "/etc/kubernetes",
                    "/root", "/var/backups", "/run", "/home", "/var/lib/postgresql", "/var/lib/pgsql",
                    "/var/lib/mysql")  # fmt: skip
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
    """Refuse a word naming a secret store, in any of the forms the path could take (`path_forms`)."""
    for pattern, why in SENSITIVE_ARGUMENTS:
        if pattern.search(word):
            raise PolicyRefusal(word, why)
    forms = path_forms(word)
    if any(climbs_inside_kernel_trees(form) for form in forms):
        raise PolicyRefusal(
            word,
            "`..` inside /proc or /dev follows the kernel's own links (/proc/net/.. is /proc/self); "
            "write the path without `..`",
        )
    for candidate in forms:
        for pattern, why in SECRET_PATHS:
            if pattern.search(candidate):
                raise PolicyRefusal(word, why)


def path_forms(word: str) -> list[str]:
    """Every path a word may name, as written first: a value attached to an option (`-f/dev/mem`,
    `if=/proc/kcore`); each in its normal form, relative ones also from / (where the local transport
    runs, and the home of some accounts); and, past an interior `..`, the rest read from /, since
    the kernel climbs from a link's target (`/var/run/../proc/kcore` is `/proc/kcore`)."""
    slash = word.find("/")
    written = [word, word[slash:]] if slash > 0 else [word]
    forms = list(written)
    for path in written:
        forms += [normalise(path, cwd=""), normalise(path)]
        rest = _after_interior_climb(path)
        if rest:
            forms.append(normalise(rest))
    return list(dict.fromkeys(forms))


def _after_interior_climb(path: str) -> str:
    """What follows the last `..` that comes after a named component, or "" if there is none."""
    parts = path.split("/")
    named = False
    rest = ""
    for index, part in enumerate(parts):
        if part == ".." and named:
            rest = "/".join(parts[index + 1 :])
        elif part not in ("", ".", ".."):
            named = True
    return rest


def climbs_inside_kernel_trees(word: str) -> bool:
    """Whether a path goes through /proc or /dev (a `proc` or `dev` folder at its start or right after
    a `..`, where it may be the root's) and climbs back with `..` after it; `/srv/dev/..` does not."""
    parts = [part for part in word.split("/") if part not in ("", ".")]
    for index, part in enumerate(parts):
        at_root = index == 0 or parts[index - 1] == ".."
        if at_root and part in ("proc", "dev") and ".." in parts[index + 1 :]:
            return True
    return False


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
