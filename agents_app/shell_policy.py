"""The read-only policy of `host_bash`: which command lines may run on a host, and why not.

The policy is an allowlist, never a blocklist: a command line is lexed like a POSIX shell would
(quotes, `|`, `;`, `&&`, `||`), every stage must name a program from `PROGRAMS`, and each
program's own rule vets its options (e.g. `find` without `-delete`/`-exec`, `systemctl` with
read verbs only). Anything the lexer sees that a shell would give meaning to (redirections,
substitutions, variables, background jobs, subshells, newlines) is refused outright.

The result of a successful check is a `Script`: the exact structure that will run. Transports
execute that structure (argv lists; SSH quotes every word), never the original text, so a word
can never become an operator after the check.

Programs are given by name only (no paths), globs and `~` are not expanded (pass literal paths;
use `find -name` for patterns), and arguments naming well-known secret stores are refused.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from agents_app.hosts.transport import Script

MAX_LENGTH = 2000
MAX_STAGES = 8
CHAIN_OPERATORS = {";", "&&", "||"}
PUNCTUATION = set("();<>|&")


class PolicyRefusal(Exception):
    """A command line the policy will not run. `part` is the offending piece, `reason` the why."""

    def __init__(self, part: str, reason: str) -> None:
        self.part = part
        self.reason = reason
        super().__init__(f"refused `{part}`: {reason}")


# --- programs that are refused with a specific explanation -------------------------------------

_REFUSED_FAMILIES: dict[str, tuple[str, ...]] = {
    "deletes files": ("rm", "rmdir", "unlink", "shred", "srm"),
    "writes or moves files": (
        "mv",
        "cp",
        "ln",
        "install",
        "rsync",
        "scp",
        "tee",
        "dd",
        "truncate",
        "touch",
        "mkdir",
        "mktemp",
        "fallocate",
        "split",
        "csplit",
        "patch",
        "tar",
        "zip",
        "unzip",
        "gzip",
        "gunzip",
        "bzip2",
        "xz",
        "git",
    ),
    "is a scripting language that can write files and run programs": (
        "sed",
        "awk",
        "gawk",
        "mawk",
        "nawk",
        "perl",
        "python",
        "python3",
        "ruby",
        "node",
        "php",
        "lua",
        "tclsh",
        "expect",
        "jq",
    ),
    "starts a shell, which would bypass this policy": (
        "sh",
        "bash",
        "dash",
        "zsh",
        "ksh",
        "fish",
        "csh",
        "tcsh",
        "busybox",
        "script",
        "screen",
        "tmux",
    ),
    "runs as another user": ("sudo", "su", "doas", "pkexec", "runuser", "sg", "newgrp"),
    "runs another program, which would bypass this policy": (
        "env",
        "nice",
        "nohup",
        "timeout",
        "xargs",
        "exec",
        "eval",
        "command",
        "builtin",
        "source",
        ".",
        "time",
        "strace",
        "ltrace",
        "gdb",
        "setsid",
        "chroot",
        "nsenter",
        "unshare",
        "flock",
        "stdbuf",
        "ionice",
        "taskset",
        "watch",
        "parallel",
        "at",
        "batch",
        "systemd-run",
        "find2perl",
    ),
    "changes permissions or ownership": (
        "chmod",
        "chown",
        "chgrp",
        "chattr",
        "setfacl",
        "chcon",
        "setcap",
        "umask",
    ),
    "signals or stops processes": ("kill", "pkill", "killall", "skill", "renice"),
    "stops or reconfigures the host": (
        "reboot",
        "shutdown",
        "halt",
        "poweroff",
        "init",
        "telinit",
        "systemd",
        "modprobe",
        "rmmod",
        "insmod",
        "hwclock",
        "timedatectl",
        "hostnamectl",
        "localectl",
        "loginctl",
    ),
    "changes disks or mounts": (
        "mkfs",
        "fdisk",
        "sfdisk",
        "parted",
        "mount",
        "umount",
        "swapon",
        "swapoff",
        "wipefs",
        "mkswap",
        "losetup",
        "lvm",
        "lvremove",
        "pvcreate",
        "fsck",
        "blkdiscard",
    ),
    "installs or removes software": (
        "apt",
        "apt-get",
        "aptitude",
        "dpkg",
        "yum",
        "dnf",
        "rpm",
        "zypper",
        "apk",
        "pip",
        "pip3",
        "npm",
        "snap",
        "flatpak",
        "make",
    ),
    "changes accounts": (
        "useradd",
        "userdel",
        "usermod",
        "groupadd",
        "groupdel",
        "passwd",
        "chpasswd",
        "chage",
        "visudo",
        "vipw",
    ),
    "changes the firewall or network": (
        "iptables",
        "ip6tables",
        "nft",
        "ufw",
        "firewall-cmd",
        "tc",
        "ifconfig",
        "route",
        "ifup",
        "ifdown",
        "nmcli",
        "ethtool",
        "arp",
    ),
    "opens connections that can send or store data": (
        "curl",
        "wget",
        "nc",
        "ncat",
        "netcat",
        "socat",
        "ssh",
        "sftp",
        "ftp",
        "telnet",
        "rsh",
    ),
    "is interactive and would hang": (
        "vi",
        "vim",
        "nano",
        "emacs",
        "less",
        "more",
        "man",
        "pager",
        "htop",
        "iftop",
        "mc",
    ),
    "can change containers or clusters and is not on the read-only list": (
        "docker",
        "podman",
        "kubectl",
        "crictl",
        "ctr",
        "nerdctl",
        "helm",
    ),
    "can restart services; use `systemctl status` to inspect them": ("service",),
}
REFUSED_PROGRAMS: dict[str, str] = {
    program: reason for reason, programs in _REFUSED_FAMILIES.items() for program in programs
}


# --- per-program rules ----------------------------------------------------------------------------

Check = Callable[[str, list[str]], None]


@dataclass(frozen=True)
class Flags:
    """Refuses short options (also inside clusters like `-cT`), long options (and any unambiguous
    abbreviation of them, as getopt_long accepts), and exact words."""

    short: str = ""
    long: tuple[str, ...] = ()
    words: tuple[str, ...] = ()
    why: str = "this option can change the host or never ends"
    max_positional: int | None = None
    positional_why: str = ""

    def __call__(self, program: str, args: list[str]) -> None:
        positional = 0
        options_done = False
        for word in args:
            if options_done or word == "-" or not word.startswith("-"):
                if word == "--" and not options_done:
                    options_done = True
                    continue
                positional += 1
                if word in self.words:
                    raise PolicyRefusal(f"{program} {word}", self.why)
                continue
            if word == "--":
                options_done = True
                continue
            if word in self.words:
                raise PolicyRefusal(f"{program} {word}", self.why)
            if word.startswith("--"):
                name = word.split("=", 1)[0]
                if len(name) > 2 and any(denied.startswith(name) for denied in self.long):
                    raise PolicyRefusal(f"{program} {name}", self.why)
            elif self.short and not word[1:].isdigit():
                for letter in word[1:]:
                    if letter in self.short:
                        raise PolicyRefusal(f"{program} -{letter}", self.why)
        if self.max_positional is not None and positional > self.max_positional:
            raise PolicyRefusal(f"{program} {' '.join(args)}", self.positional_why)


def _no_check(program: str, args: list[str]) -> None:
    return None


def _ps(program: str, args: list[str]) -> None:
    """BSD-style `e` (as in `ps auxe`) prints every process's environment, which holds secrets."""
    takes_value = {
        "-o",
        "-O",
        "-p",
        "-u",
        "-U",
        "-C",
        "-G",
        "-g",
        "-t",
        "-q",
        "--sort",
        "--pid",
        "--user",
        "--format",
        "-s",
        "--sid",
        "--ppid",
        "--cols",
        "--columns",
        "--rows",
        "--lines",
        "-N",
    }
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        if word in takes_value:
            skip = True
            continue
        if re.fullmatch(r"[A-Za-z]+", word) and "e" in word:
            raise PolicyRefusal(
                f"ps {word}", "the BSD `e` option shows process environments, which hold secrets"
            )


_SYSTEMCTL_VERBS = {
    "status",
    "show",
    "cat",
    "is-active",
    "is-enabled",
    "is-failed",
    "is-system-running",
    "list-units",
    "list-unit-files",
    "list-timers",
    "list-sockets",
    "list-dependencies",
    "list-jobs",
    "help",
}
_SYSTEMCTL_VALUE_OPTIONS = {"-t", "--type", "-p", "--property", "--state", "-n", "--lines", "-o", "--output"}


def _systemctl(program: str, args: list[str]) -> None:
    skip = False
    for word in args:
        if skip:
            skip = False
            continue
        if word in _SYSTEMCTL_VALUE_OPTIONS:
            skip = True
            continue
        if word in {"-H", "-M"} or word.split("=", 1)[0] in {"--host", "--machine"}:
            raise PolicyRefusal(f"systemctl {word}", "reaching other hosts or containers is not allowed")
        if word.startswith("-"):
            continue
        if word not in _SYSTEMCTL_VERBS:
            raise PolicyRefusal(
                f"systemctl {word}",
                f"only read verbs are allowed ({', '.join(sorted(_SYSTEMCTL_VERBS))})",
            )
        return  # everything after the verb is unit names and options


_IP_OBJECTS = {
    "a",
    "addr",
    "address",
    "l",
    "link",
    "r",
    "ro",
    "route",
    "n",
    "neigh",
    "neighbor",
    "neighbour",
    "ru",
    "rule",
    "maddr",
    "maddress",
    "netconf",
    "ntable",
    "-",
}
_IP_VERBS = {"show", "list", "lst", "ls", "get"}


def _ip(program: str, args: list[str]) -> None:
    words = list(args)
    while words and words[0].startswith("-"):
        option = words.pop(0)
        if option in {"-b", "-batch", "-force", "-n", "-netns", "-N"}:
            raise PolicyRefusal(f"ip {option}", "batch files and network namespaces are not allowed")
        if option in {"-f", "-family", "-rc", "-rcvbuf", "-l", "-loops"} and words:
            words.pop(0)
    if not words:
        return
    obj = words.pop(0)
    if obj not in _IP_OBJECTS:
        raise PolicyRefusal(f"ip {obj}", "only address, link, route, neigh, rule show verbs are allowed")
    if words and words[0] not in _IP_VERBS:
        raise PolicyRefusal(
            f"ip {obj} {words[0]}", f"only read verbs are allowed ({', '.join(sorted(_IP_VERBS))})"
        )


def _date(program: str, args: list[str]) -> None:
    Flags(short="s", long=("--set",), why="setting the clock is not allowed")(program, args)
    for word in args:
        if not word.startswith("-") and not word.startswith("+"):
            raise PolicyRefusal(f"date {word}", "a bare date argument sets the clock; use +FORMAT to format")


_HOSTNAME_FLAGS = {
    "-f",
    "-s",
    "-i",
    "-I",
    "-d",
    "-a",
    "-A",
    "-y",
    "--fqdn",
    "--long",
    "--short",
    "--ip-address",
    "--all-ip-addresses",
    "--domain",
    "--alias",
    "--all-fqdns",
}


def _hostname(program: str, args: list[str]) -> None:
    for word in args:
        if word not in _HOSTNAME_FLAGS:
            raise PolicyRefusal(
                f"hostname {word}", "only display options are allowed; other arguments set the name"
            )


def _crontab(program: str, args: list[str]) -> None:
    words = list(args)
    if "-l" not in words:
        raise PolicyRefusal("crontab " + " ".join(words), "only listing (`crontab -l`) is allowed")
    while words:
        word = words.pop(0)
        if word == "-l":
            continue
        if word == "-u" and words:
            words.pop(0)
            continue
        raise PolicyRefusal(f"crontab {word}", "only `-l` and `-u USER` are allowed")


def _sysctl(program: str, args: list[str]) -> None:
    Flags(short="wpf", long=("--write", "--load", "--system"), why="changing kernel settings is not allowed")(
        program, args
    )
    for word in args:
        if "=" in word:
            raise PolicyRefusal(f"sysctl {word}", "assigning a kernel setting is not allowed")


def _repeating(program: str, args: list[str]) -> None:
    """vmstat/iostat: a delay without a count runs forever."""
    numbers = [w for w in args if w.isdigit()]
    if len(numbers) == 1:
        raise PolicyRefusal(
            f"{program} {numbers[0]}", "a delay without a count never ends; add a count (e.g. `1 5`)"
        )


def _top(program: str, args: list[str]) -> None:
    joined = " ".join(args)
    if not re.search(r"(^|\s)-\w*b", joined) or not re.search(r"(^|\s)-\w*n", joined):
        raise PolicyRefusal(
            "top " + joined, "only batch mode with an iteration count (`top -b -n 1`) is allowed"
        )


def _lsof(program: str, args: list[str]) -> None:
    Flags(short="r", why="repeat mode never ends")(program, args)
    for word in args:
        if word.startswith("+r"):
            raise PolicyRefusal(f"lsof {word}", "repeat mode never ends")


_OPENSSL_VERBS = {"x509", "s_client", "verify", "version", "crl", "asn1parse"}
_OPENSSL_DENIED = (
    "-out",
    "-keyout",
    "-sess_out",
    "-msgfile",
    "-keylogfile",
    "-writerand",
    "-signkey",
    "-CA",
    "-CAkey",
    "-CAserial",
    "-CAcreateserial",
    "-new",
    "-req",
    "-set_serial",
    "-genkey",
)


def _openssl(program: str, args: list[str]) -> None:
    if not args or args[0] not in _OPENSSL_VERBS:
        verb = args[0] if args else ""
        raise PolicyRefusal(
            f"openssl {verb}".strip(), f"only {', '.join(sorted(_OPENSSL_VERBS))} are allowed"
        )
    for word in args[1:]:
        if word in _OPENSSL_DENIED:
            raise PolicyRefusal(f"openssl {word}", "this option writes files or signs certificates")


_FOLLOW = "following output never ends"
VIRTUAL_ROOTS = ("/proc", "/sys", "/dev")
GREP_FAMILY = {"grep", "egrep", "fgrep", "zgrep"}
_GREP_LONG_VALUES = {"--regexp", "--file", "--max-count", "--after-context", "--before-context", "--context",
                     "--directories", "--devices", "--label", "--include", "--exclude", "--exclude-dir",
                     "--exclude-from", "--binary-files", "--color", "--colour"}  # fmt: skip


def _grep_scan(program: str, args: list[str]) -> tuple[bool, list[str]]:
    """(recursive?, the path arguments) of a grep command line; refuses -R (follows any symlink)."""
    recursive, pattern_given, positional = False, False, []
    index = 0
    while index < len(args):
        word = args[index]
        if word == "--":
            positional += args[index + 1 :]
            break
        if word.startswith("--"):
            name, has_value, value = word.partition("=")
            if name == "--dereference-recursive":
                raise PolicyRefusal(f"{program} {name}", "-R follows symbolic links anywhere; use -r")
            if name in _GREP_LONG_VALUES and not has_value and index + 1 < len(args):
                index += 1
                value = args[index]
            recursive |= name == "--recursive" or (name == "--directories" and value.startswith("recurse"))
            pattern_given |= name in ("--regexp", "--file")
        elif word.startswith("-") and len(word) > 1:
            for position, letter in enumerate(word[1:]):
                if letter == "R":
                    raise PolicyRefusal(f"{program} -R", "-R follows symbolic links anywhere; use -r")
                recursive |= letter == "r"
                if letter in "efmABCdD":
                    value = word[position + 2 :]
                    if not value and index + 1 < len(args):
                        index += 1
                        value = args[index]
                    recursive |= letter == "d" and value.startswith("recurse")
                    pattern_given |= letter in "ef"
                    break
        else:
            positional.append(word)
        index += 1
    return recursive, positional if pattern_given else positional[1:]


def _grep(program: str, args: list[str]) -> None:
    recursive, paths = _grep_scan(program, args)
    if not recursive:
        return
    if not paths:
        raise PolicyRefusal(f"{program} -r", "name the directories to search")
    for path in paths:
        normal = _normal(path)
        if normal == "/" or any(_inside(normal, root) for root in VIRTUAL_ROOTS):
            raise PolicyRefusal(
                f"{program} -r {path}",
                "searching /, /proc, /sys or /dev recursively reads process environments",
            )


def _normal(path: str) -> str:
    """The absolute, normalised form of a path argument (relative ones count from /)."""
    return posixpath.normpath(posixpath.join("/", path))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


PROGRAMS: dict[str, Check] = {
    # files and text
    "ls": _no_check,
    "cat": _no_check,
    "head": _no_check,
    "tail": Flags(short="fF", long=("--follow", "--retry", "--pid"), why=_FOLLOW),
    "grep": _grep,
    "egrep": _grep,
    "fgrep": _grep,
    "zgrep": _grep,
    "zcat": _no_check,
    "wc": _no_check,
    "sort": Flags(
        short="o", long=("--output", "--compress-program"), why="this option writes a file or runs a program"
    ),
    "uniq": Flags(
        max_positional=1, positional_why="a second file name is an output file uniq would overwrite"
    ),
    "cut": _no_check,
    "tr": _no_check,
    "tac": _no_check,
    "nl": _no_check,
    "stat": _no_check,
    "file": Flags(short="C", long=("--compile",), why="compiling a magic file writes it"),
    "readlink": _no_check,
    "realpath": _no_check,
    "basename": _no_check,
    "dirname": _no_check,
    "md5sum": _no_check,
    "sha1sum": _no_check,
    "sha256sum": _no_check,
    "echo": _no_check,
    "find": Flags(
        words=("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"),
        why="this action deletes, writes files or runs programs",
    ),
    "du": _no_check,
    "df": _no_check,
    # processes, memory, system
    "ps": _ps,
    "top": _top,
    "free": Flags(short="s", long=("--seconds",), why="repeating output never ends"),
    "uptime": _no_check,
    "vmstat": _repeating,
    "iostat": _repeating,
    "uname": _no_check,
    "hostname": _hostname,
    "date": _date,
    "id": _no_check,
    "whoami": _no_check,
    "w": _no_check,
    "who": _no_check,
    "last": _no_check,
    "nproc": _no_check,
    "lscpu": _no_check,
    "lsblk": _no_check,
    "findmnt": Flags(short="p", long=("--poll",), why="polling never ends"),
    "lsof": _lsof,
    "sysctl": _sysctl,
    "getent": _no_check,
    "crontab": _crontab,
    # logs and services
    "journalctl": Flags(
        short="f",
        long=(
            "--follow",
            "--flush",
            "--rotate",
            "--sync",
            "--vacuum-size",
            "--vacuum-time",
            "--vacuum-files",
            "--relinquish-var",
            "--smart-relinquish-var",
            "--setup-keys",
            "--update-catalog",
        ),
        why="this option follows forever or changes the journal",
    ),
    "dmesg": Flags(
        short="cCDEnwW",
        long=(
            "--clear",
            "--read-clear",
            "--console-off",
            "--console-on",
            "--console-level",
            "--follow",
            "--follow-new",
        ),
        why="this option clears the ring buffer, changes the console or follows forever",
    ),
    "systemctl": _systemctl,
    # network
    "ss": Flags(
        short="KDE",
        long=("--kill", "--diag", "--events"),
        why="this option kills sockets, writes a file or never ends",
    ),
    "netstat": Flags(short="c", long=("--continuous",), why="continuous output never ends"),
    "ip": _ip,
    "dig": _no_check,
    "host": _no_check,
    "nslookup": _no_check,
    "openssl": _openssl,
}

# --- arguments that name secret stores ----------------------------------------------------------

SENSITIVE_ARGUMENTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"environ"), "process environments hold secrets"),
    (re.compile(r"(^|/)g?shadow-?$"), "password hashes are secrets"),
    (re.compile(r"(^|/)id_(rsa|dsa|ecdsa|ed25519)(_sk)?$|ssh_host_\w+_key$"), "private SSH keys are secrets"),
    (re.compile(r"(^|/)ssl/private(/|$)|\.key$"), "private TLS keys are secrets"),
    (
        re.compile(r"secret|password|credential|\.netrc|\.pgpass", re.IGNORECASE),
        "this looks like a secret store",
    ),
)

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_VARIABLE = re.compile(r"\$(\{[^}]*\}?|\w+|[@*#?$!-])")


def check(command_line: str, protected: Sequence[str] = ()) -> Script:
    """Return the Script to run for `command_line`, or raise PolicyRefusal saying what and why.

    `protected` lists absolute directories no argument may point into (nor a recursive grep
    cover): the local transport passes Ongrid's own data folder, which holds its database."""
    _check_raw(command_line)
    tokens = _lex(command_line)
    pipelines, operators = _split(tokens)
    stages = sum(len(p) for p in pipelines)
    if stages > MAX_STAGES:
        raise PolicyRefusal(command_line[:60], f"at most {MAX_STAGES} commands per line")
    for pipeline in pipelines:
        for argv in pipeline:
            _check_command(argv)
            _check_protected(argv, protected)
    return Script(tuple(tuple(tuple(a) for a in p) for p in pipelines), tuple(operators))


def _check_raw(line: str) -> None:
    if not line.strip():
        raise PolicyRefusal("", "the command line is empty")
    if len(line) > MAX_LENGTH:
        raise PolicyRefusal(line[:40] + "…", f"command lines are limited to {MAX_LENGTH} characters")
    for char, why in (
        ("\n", "newlines would start another command; send one command line"),
        ("\r", "carriage returns are not allowed"),
        ("\0", "NUL bytes are not allowed"),
        ("`", "command substitution (backticks) is not allowed"),
    ):
        if char in line:
            raise PolicyRefusal(repr(char)[1:-1], why)
    if "$(" in line:
        raise PolicyRefusal("$(", "command substitution is not allowed")
    match = _VARIABLE.search(line)
    if match:
        raise PolicyRefusal(match.group(0), "variable and parameter expansion is not allowed")


def _lex(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError as exc:
        raise PolicyRefusal(line[-40:], f"cannot parse the command line ({exc})") from None


def _is_operator(token: str) -> bool:
    return bool(token) and set(token) <= PUNCTUATION


def _split(tokens: Sequence[str]) -> tuple[list[list[list[str]]], list[str]]:
    """Group tokens into pipelines of commands; refuse every operator except | ; && ||."""
    pipelines: list[list[list[str]]] = [[[]]]
    operators: list[str] = []
    for token in tokens:
        if not _is_operator(token):
            pipelines[-1][-1].append(token)
            continue
        if token == "|":
            if not pipelines[-1][-1]:
                raise PolicyRefusal("|", "a pipe needs a command on both sides")
            pipelines[-1].append([])
        elif token in CHAIN_OPERATORS:
            if not pipelines[-1][-1]:
                raise PolicyRefusal(token, f"`{token}` needs a command before it")
            operators.append(token)
            pipelines.append([[]])
        else:
            raise PolicyRefusal(token, _operator_reason(token))
    if not pipelines[-1][-1]:
        if operators and operators[-1] == ";" and len(pipelines[-1]) == 1:
            pipelines.pop()
            operators.pop()
        else:
            raise PolicyRefusal(tokens[-1] if tokens else "", "the command line ends without a command")
    return pipelines, operators


def _operator_reason(token: str) -> str:
    if "<" in token or ">" in token:
        return "redirections are not allowed (they read or write files outside the policy)"
    if token.startswith("|&") or token.endswith("|&"):
        return "`|&` is not allowed; use a plain pipe"
    if "(" in token or ")" in token:
        return "subshells and grouping are not allowed"
    if "&" in token:
        return "background jobs are not allowed"
    return "this shell operator is not allowed"


def _check_command(argv: list[str]) -> None:
    program, args = argv[0], argv[1:]
    if _ASSIGNMENT.match(program):
        raise PolicyRefusal(program, "environment assignments before a command are not allowed")
    if "/" in program:
        raise PolicyRefusal(program, "give the program's name, not a path")
    if program in REFUSED_PROGRAMS:
        raise PolicyRefusal(program, f"`{program}` {REFUSED_PROGRAMS[program]}")
    rule = PROGRAMS.get(program)
    if rule is None:
        raise PolicyRefusal(program, f"`{program}` is not on the list of read-only inspection programs")
    for word in args:
        for pattern, why in SENSITIVE_ARGUMENTS:
            if pattern.search(word):
                raise PolicyRefusal(word, why)
    rule(program, args)


def _check_protected(argv: list[str], protected: Sequence[str]) -> None:
    if not protected:
        return
    roots = [_normal(p) for p in protected]
    for word in argv[1:]:
        value = word.partition("=")[2] if word.startswith("-") else word
        if value and any(_inside(_normal(value), root) for root in roots):
            raise PolicyRefusal(word, "Ongrid's own data folder (database, secrets) is off limits")
    if argv[0] in GREP_FAMILY:
        recursive, paths = _grep_scan(argv[0], argv[1:])
        for path in paths if recursive else ():
            if any(_inside(root, _normal(path)) for root in roots):
                raise PolicyRefusal(f"{argv[0]} -r {path}", "the search would cover Ongrid's own data folder")


def allowed_programs() -> list[str]:
    return sorted(PROGRAMS)
