"""The read-only policy of `host_bash`: which command lines may run on a host, and why not.

The policy is a parser, not a list of patterns:

1. The command line is tokenised with POSIX shell quoting. A quoted or backslash-escaped `|`,
   `;`, `>` or `&` is data; only unquoted operator characters are operators. Pipes and
   `;` / `&&` / `||` between commands are kept; every other operator (redirections, background
   jobs, subshells) is refused, and so are substitutions, variables and newlines anywhere.
2. Every command names a program of `PROGRAMS`, each with a declared grammar of its options:
   which take a value (separate word, `--opt=value`, attached `-ovalue`), clustered short flags,
   its own conventions (`ip`'s prefix matching, openssl's single-dash options, find's expression,
   ps's BSD letters). An option value is therefore never mistaken for a verb, an operand or an
   operator. **Unknown options are refused**, and so are abbreviated long options: the policy
   never guesses how a program would expand them.
3. Each program's rule then vets the parsed command: read verbs only (`systemctl`, `ip`), no
   output files, no stdin-fed command modes, no code loading, no network egress.
4. Every word is checked against a deny list of secret stores (shadow files and their backups,
   private keys, cloud/cluster/database credentials, process environments) after path
   normalisation (`//`, `.`, `..`), and recursive reads may not cover /proc, /etc/ssh, homes...
5. On the Ongrid host itself (`protected` is non-empty: the local transport) every path is also
   resolved with `os.path.realpath` (symbolic links, `/proc/self/root`, `/proc/self/cwd`) and
   refused inside Ongrid's own folders (data, code, virtualenv) or /proc and /sys, and a
   recursive read rooted above one of them is refused.

The result of a successful check is a `Script`: the exact structure that will run. Transports
execute that structure (argv lists; SSH quotes every word), never the original text, so a word
can never become an operator after the check. Globs and `~` are not expanded.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from agents_app.toolsets.hosts.transport import Script

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


# --- parsed commands ----------------------------------------------------------------------------

UNKNOWN = "unknown option: only options the policy knows to be read-only are accepted"
NEEDS_VALUE = "this option needs a value"


@dataclass
class Parsed:
    """One command after its program's grammar: options with their values, operands, and which
    words name files. Rules add what the command reads recursively."""

    program: str
    options: list[tuple[str, str | None]] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    # (root, reads file contents?) of every recursive walk the command makes
    recursive: list[tuple[str, bool]] = field(default_factory=list)
    follows_links: bool = False

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    def values(self, *names: str) -> list[str]:
        return [value for name, value in self.options if name in names and value is not None]


def _refuse_option(program: str, option: str, reason: str = UNKNOWN) -> PolicyRefusal:
    return PolicyRefusal(f"{program} {option}", reason)


FLAG, REQUIRED, OPTIONAL = 0, 1, 2  # how an option takes its value


def _short_table(spec: str) -> dict[str, int]:
    """getopt's notation: `a` a flag, `b:` takes a value, `c::` takes an optional attached value."""
    table: dict[str, int] = {}
    index = 0
    while index < len(spec):
        letter = spec[index]
        index += 1
        arity = FLAG
        if spec[index : index + 2] == "::":
            arity, index = OPTIONAL, index + 2
        elif spec[index : index + 1] == ":":
            arity, index = REQUIRED, index + 1
        table[letter] = arity
    return table


def _long_table(spec: str) -> dict[str, int]:
    """`name` a flag, `name=` takes a value (`--name=v` or `--name v`), `name?` only `--name=v`."""
    table: dict[str, int] = {}
    for word in spec.split():
        if word.endswith("="):
            table["--" + word[:-1]] = REQUIRED
        elif word.endswith("?"):
            table["--" + word[:-1]] = OPTIONAL
        else:
            table["--" + word] = FLAG
    return table


class Grammar:
    """A GNU getopt_long command line: clustered short options, `-ovalue`, `--long=value`,
    `--long value`, options anywhere before `--` (argument permutation)."""

    def __init__(
        self,
        short: str = "",
        long: str = "",
        *,
        denied: dict[str, str] | None = None,
        files: Iterable[str] = (),
        operands: str = "files",
        numeric: bool = False,
        lookahead: dict[str, str] | None = None,
        rule: Callable[[Parsed], None] | None = None,
    ) -> None:
        self.short = _short_table(short)
        self.long = _long_table(long + " help version")
        self.denied = dict(denied or {})
        self.file_options = set(files)
        self.operands_are_files = operands == "files"
        self.numeric = numeric
        # options with an optional value that, like journalctl's -n and -b, also take the next
        # word when it looks like their value
        self.lookahead = {name: re.compile(pattern) for name, pattern in (lookahead or {}).items()}
        self.rule = rule

    def parse(self, program: str, args: Sequence[str]) -> Parsed:
        parsed = Parsed(program)
        index = 0
        while index < len(args):
            word = args[index]
            index += 1
            if word == "--":
                for operand in args[index:]:
                    self._operand(parsed, operand)
                break
            if word.startswith("--"):
                index = self._long(parsed, word, args, index)
            elif word.startswith("-") and len(word) > 1:
                index = self._cluster(parsed, word, args, index)
            else:
                self._operand(parsed, word)
        if self.rule is not None:
            self.rule(parsed)
        return parsed

    def _operand(self, parsed: Parsed, word: str) -> None:
        parsed.operands.append(word)
        if self.operands_are_files:
            parsed.files.append(word)

    def _value(self, parsed: Parsed, name: str, value: str | None) -> None:
        parsed.options.append((name, value))
        if value is not None and name in self.file_options:
            parsed.files.append(value)

    def _long(self, parsed: Parsed, word: str, args: Sequence[str], index: int) -> int:
        program = parsed.program
        name, has_value, value = word.partition("=")
        if name in self.denied:
            raise _refuse_option(program, name, self.denied[name])
        arity = self.long.get(name)
        if arity is None:
            denied = [option for option in self.denied if option.startswith(name) and option.startswith("--")]
            if denied:
                raise _refuse_option(program, name, self.denied[denied[0]])
            known = sorted(option for option in self.long if option.startswith(name))
            if known:
                raise _refuse_option(
                    program, name, f"abbreviated options are not accepted; write `{known[0]}` in full"
                )
            raise _refuse_option(program, name)
        if arity == FLAG:
            if has_value:
                raise _refuse_option(program, name, "this option takes no value")
            self._value(parsed, name, None)
        elif has_value:
            self._value(parsed, name, value)
        elif arity == REQUIRED:
            if index >= len(args):
                raise _refuse_option(program, name, NEEDS_VALUE)
            self._value(parsed, name, args[index])
            index += 1
        else:
            value, index = self._look_ahead(name, args, index)
            self._value(parsed, name, value)
        return index

    def _look_ahead(self, name: str, args: Sequence[str], index: int) -> tuple[str | None, int]:
        pattern = self.lookahead.get(name)
        if pattern is not None and index < len(args) and pattern.fullmatch(args[index]):
            return args[index], index + 1
        return None, index

    def _cluster(self, parsed: Parsed, word: str, args: Sequence[str], index: int) -> int:
        program = parsed.program
        if self.numeric and word[1:].isdigit():
            parsed.options.append(("-NUM", word[1:]))
            return index
        position = 1
        while position < len(word):
            letter = word[position]
            position += 1
            option = "-" + letter
            if option in self.denied:
                raise _refuse_option(program, option, self.denied[option])
            arity = self.short.get(letter)
            if arity is None:
                raise _refuse_option(program, option)
            if arity == FLAG:
                self._value(parsed, option, None)
                continue
            value: str | None = word[position:]
            if not value:
                value = None
                if arity == REQUIRED:
                    if index >= len(args):
                        raise _refuse_option(program, option, NEEDS_VALUE)
                    value = args[index]
                    index += 1
                else:
                    value, index = self._look_ahead(option, args, index)
            self._value(parsed, option, value)
            break
        return index


class Custom:
    """A program whose command line does not follow getopt_long; `parse` is its own parser."""

    def __init__(self, parse: Callable[[str, Sequence[str]], Parsed]) -> None:
        self.parse = parse


# --- per-program rules ------------------------------------------------------------------------------

_FOLLOW = "following output never ends"
_WRITES = "this option writes a file"
_RUNS = "this option runs another program"
_OTHER_HOST = "reaching other hosts, containers or images is not allowed"


def _numbers_need_a_count(parsed: Parsed) -> None:
    """vmstat/iostat: `DELAY` alone repeats forever; `DELAY COUNT` ends."""
    numbers = [word for word in parsed.operands if word.isdigit()]
    if len(numbers) == 1:
        raise PolicyRefusal(
            f"{parsed.program} {numbers[0]}", "a delay without a count never ends; add a count (e.g. `1 5`)"
        )


def _vmstat(parsed: Parsed) -> None:
    for word in parsed.operands:
        if not word.isdigit():
            raise PolicyRefusal(f"vmstat {word}", "vmstat takes a delay and a count (numbers)")
    _numbers_need_a_count(parsed)


def _uniq(parsed: Parsed) -> None:
    if len(parsed.operands) > 1:
        raise PolicyRefusal(
            "uniq " + " ".join(parsed.operands), "a second file name is an output file uniq would overwrite"
        )


def _date(parsed: Parsed) -> None:
    for word in parsed.operands:
        if not word.startswith("+"):
            raise PolicyRefusal(f"date {word}", "a bare date argument sets the clock; use +FORMAT to format")


def _sysctl(parsed: Parsed) -> None:
    for word in parsed.operands:
        if "=" in word:
            raise PolicyRefusal(f"sysctl {word}", "assigning a kernel setting is not allowed")


def _getent(parsed: Parsed) -> None:
    if parsed.operands and parsed.operands[0] in {"shadow", "gshadow"}:
        raise PolicyRefusal(f"getent {parsed.operands[0]}", "password hashes are secrets")


def _top(parsed: Parsed) -> None:
    if not parsed.has("-b") or not parsed.has("-n"):
        raise PolicyRefusal(
            "top " + " ".join(name + (value or "") for name, value in parsed.options),
            "only batch mode with an iteration count (`top -b -n 1`) is allowed",
        )
    if parsed.operands:
        raise PolicyRefusal(f"top {parsed.operands[0]}", "top takes no operands")


def _no_operands(parsed: Parsed) -> None:
    if parsed.operands:
        raise PolicyRefusal(f"{parsed.program} {parsed.operands[0]}", "this program takes no operands here")


def _recursive_walk(parsed: Parsed, contents: bool, default: str = ".") -> None:
    for root in parsed.operands or [default]:
        parsed.recursive.append((root, contents))


def _grep(parsed: Parsed) -> None:
    patterned = parsed.has("-e", "--regexp", "-f", "--file")
    paths = parsed.operands if patterned else parsed.operands[1:]
    if not patterned and not parsed.operands:
        raise PolicyRefusal(parsed.program, "grep needs a pattern")
    parsed.files.extend(paths)
    recursive = parsed.has("-r", "--recursive") or any(
        value.startswith("recurse") for value in parsed.values("-d", "--directories")
    )
    if recursive:
        if not paths:
            raise PolicyRefusal(f"{parsed.program} -r", "name the directories to search")
        parsed.recursive.extend((path, True) for path in paths)


def _ls(parsed: Parsed) -> None:
    parsed.follows_links = parsed.has("-L", "--dereference")
    if parsed.has("-R", "--recursive"):
        _recursive_walk(parsed, contents=False)


def _du(parsed: Parsed) -> None:
    parsed.follows_links = parsed.has("-L", "--dereference")
    _recursive_walk(parsed, contents=False)


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
    "list-machines",
    "help",
}


def _systemctl(parsed: Parsed) -> None:
    if not parsed.operands:
        return  # plain `systemctl` lists units
    verb = parsed.operands[0]
    if verb not in _SYSTEMCTL_VERBS:
        raise PolicyRefusal(
            f"systemctl {verb}", f"only read verbs are allowed ({', '.join(sorted(_SYSTEMCTL_VERBS))})"
        )


# --- programs with their own command-line conventions -----------------------------------------------

# find: global options, start paths, then an expression of primaries with fixed arities.
_FIND_FILE_ARGUMENTS = {"-anewer", "-cnewer", "-newer", "-samefile", "-files0-from"}
_FIND_PRIMARIES: dict[str, int] = {
    # options
    "-daystart": 0, "-depth": 0, "-d": 0, "-follow": 0, "-ignore_readdir_race": 0, "-maxdepth": 1,
    "-mindepth": 1, "-mount": 0, "-noignore_readdir_race": 0, "-noleaf": 0, "-regextype": 1,
    "-warn": 0, "-nowarn": 0, "-xdev": 0, "-files0-from": 1, "-help": 0, "-version": 0,
    # tests
    "-amin": 1, "-anewer": 1, "-atime": 1, "-cmin": 1, "-cnewer": 1, "-ctime": 1, "-empty": 0,
    "-executable": 0, "-false": 0, "-fstype": 1, "-gid": 1, "-group": 1, "-ilname": 1, "-iname": 1,
    "-inum": 1, "-ipath": 1, "-iregex": 1, "-iwholename": 1, "-links": 1, "-lname": 1, "-mmin": 1,
    "-mtime": 1, "-name": 1, "-newer": 1, "-nogroup": 0, "-nouser": 0, "-path": 1, "-perm": 1,
    "-readable": 0, "-regex": 1, "-samefile": 1, "-size": 1, "-true": 0, "-type": 1, "-uid": 1,
    "-used": 1, "-user": 1, "-wholename": 1, "-writable": 0, "-xtype": 1, "-context": 1,
    # actions that only print to standard output
    "-print": 0, "-print0": 0, "-printf": 1, "-ls": 0, "-prune": 0, "-quit": 0,
    # operators
    "(": 0, ")": 0, "!": 0, "-not": 0, "-a": 0, "-and": 0, "-o": 0, "-or": 0, ",": 0,
}  # fmt: skip
_FIND_DENIED = {
    name: "this action deletes, writes files or runs programs"
    for name in ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls")
}
_FIND_NEWER = re.compile(r"-newer[aBcmt][aBcmt]")


def _parse_find(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    words = list(args)
    while words and (words[0] in {"-H", "-L", "-P"} or re.fullmatch(r"-O\d", words[0]) or words[0] == "-D"):
        option = words.pop(0)
        value = words.pop(0) if option == "-D" and words else None
        if option == "-D" and value is None:
            raise _refuse_option(program, option, NEEDS_VALUE)
        parsed.options.append((option, value))
    while (
        words
        and not (words[0].startswith("-") and len(words[0]) > 1)
        and words[0] not in {"(", ")", "!", ","}
    ):
        root = words.pop(0)
        parsed.operands.append(root)
        parsed.files.append(root)
    while words:
        primary = words.pop(0)
        if primary in _FIND_DENIED:
            raise _refuse_option(program, primary, _FIND_DENIED[primary])
        arity = 1 if _FIND_NEWER.fullmatch(primary) else _FIND_PRIMARIES.get(primary)
        if arity is None:
            raise _refuse_option(program, primary, "unknown find primary (or a path after the expression)")
        value = None
        if arity:
            if not words:
                raise _refuse_option(program, primary, NEEDS_VALUE)
            value = words.pop(0)
            if primary in _FIND_FILE_ARGUMENTS or _FIND_NEWER.fullmatch(primary):
                parsed.files.append(value)
        parsed.options.append((primary, value))
    parsed.follows_links = parsed.has("-L", "-follow")
    _recursive_walk(parsed, contents=False)
    return parsed


# ps: UNIX options (`-eo pid`), BSD letters (`aux`), GNU long options (`--sort=-pcpu`).
_PS_UNIX = _short_table("AadeNTrxcfFjlMyZHwLmVC:G:g:p:q:s:t:u:U:O:o:")
_PS_BSD = _short_table("acfhjlmrsuvwxSTXLHnZo:O:p:t:U:k:")
_PS_LONG = _long_table(
    "sort= pid= ppid= user= User= group= Group= format= cols= columns= rows= lines= sid= tty= "
    "quick-pid= no-headers no-heading headers forest width= cumulative deselect info context help version"
)
_PS_ENVIRONMENT = "the BSD `e` option shows process environments, which hold secrets"


def _parse_ps(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word.startswith("--"):
            name, has_value, value = word.partition("=")
            arity = _PS_LONG.get(name)
            if arity is None:
                raise _refuse_option(program, name)
            if arity == REQUIRED and not has_value:
                if index >= len(args):
                    raise _refuse_option(program, name, NEEDS_VALUE)
                value, index = args[index], index + 1
            parsed.options.append((name, value if arity else None))
            continue
        unix = word.startswith("-") and len(word) > 1
        letters, table = (word[1:], _PS_UNIX) if unix else (word, _PS_BSD)
        if not unix and re.fullmatch(r"[\d,]+", word):
            parsed.operands.append(word)  # a pid list
            continue
        if not unix and not re.fullmatch(r"[A-Za-z]+", word):
            raise PolicyRefusal(f"ps {word}", "not a ps option or a process id list")
        for position, letter in enumerate(letters):
            if not unix and letter == "e":
                raise PolicyRefusal(f"ps {word}", _PS_ENVIRONMENT)
            arity = table.get(letter)
            if arity is None:
                raise _refuse_option(program, ("-" if unix else "") + letter)
            if arity == FLAG:
                parsed.options.append((letter, None))
                continue
            value = letters[position + 1 :]
            if not value:
                if index >= len(args):
                    raise _refuse_option(program, letter, NEEDS_VALUE)
                value, index = args[index], index + 1
            parsed.options.append((letter, value))
            break
    return parsed


# ip: options matched by prefix in the order iproute2 tries them (first match wins), objects and
# verbs as exact words. An option whose prefix could also mean a refused option is refused.
_IP_OPTIONS: tuple[tuple[str, int, str | None], ...] = (
    ("-loops", REQUIRED, None),
    ("-family", REQUIRED, None),
    ("-4", -1, None), ("-6", -1, None), ("-0", -1, None), ("-I", -1, None), ("-D", -1, None),
    ("-M", -1, None), ("-B", -1, None),
    ("-human", FLAG, None), ("-human-readable", FLAG, None), ("-iec", FLAG, None),
    ("-stats", FLAG, None), ("-statistics", FLAG, None), ("-details", FLAG, None),
    ("-resolve", FLAG, None), ("-oneline", FLAG, None), ("-timestamp", FLAG, None),
    ("-tshort", FLAG, None), ("-Version", FLAG, None), ("-force", FLAG, None),
    ("-batch", REQUIRED, "batch mode reads commands from a file or standard input"),
    ("-brief", FLAG, None), ("-json", FLAG, None), ("-pretty", FLAG, None),
    ("-rcvbuf", REQUIRED, None), ("-color", FLAG, None), ("-colour", FLAG, None), ("-help", FLAG, None),
    ("-netns", REQUIRED, "switching network namespaces is not allowed"),
    ("-Numeric", FLAG, None), ("-all", FLAG, None),
)  # fmt: skip
_IP_OBJECTS = {
    "a", "ad", "addr", "address", "r", "ro", "route", "ru", "rule", "n", "neigh", "neighbor",
    "neighbour", "l", "link", "m", "maddr", "maddress", "netconf", "ntable",
}  # fmt: skip
_IP_VERBS = {"show", "list", "lst", "ls", "get"}


def _parse_ip(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    words = list(args)
    while words and words[0].startswith("-"):
        word = words.pop(0)
        if word == "--":
            break
        option = word[1:] if word.startswith("--") else word
        if option.split("=", 1)[0] in {"-c", "-co", "-col", "-colo", "-color", "-colou", "-colour"}:
            parsed.options.append(("-color", None))
            continue
        if len(option) < 2:
            raise _refuse_option(program, word)
        matches = [
            entry
            for entry in _IP_OPTIONS
            if (entry[0] == option if entry[1] < 0 else entry[0].startswith(option))
        ]
        for name, _, reason in matches:
            if reason:
                raise _refuse_option(program, word, f"`ip {name}`: {reason}")
        if not matches:
            raise _refuse_option(program, word)
        name, arity, _ = matches[0]
        value = None
        if arity == REQUIRED:
            if not words:
                raise _refuse_option(program, word, NEEDS_VALUE)
            value = words.pop(0)
        parsed.options.append((name, value))
    if not words:
        return parsed
    obj = words.pop(0)
    if obj not in _IP_OBJECTS:
        raise PolicyRefusal(
            f"ip {obj}",
            "only the address, link, route, rule, neigh, maddr, netconf, ntable objects are allowed",
        )
    if words and words[0] not in _IP_VERBS:
        raise PolicyRefusal(
            f"ip {obj} {words[0]}", f"only read verbs are allowed ({', '.join(sorted(_IP_VERBS))})"
        )
    parsed.operands = [obj, *words]
    return parsed


# dig: `@server`, `+queryoption`, single-letter options, and name/type/class operands.
_DIG_FLAGS = set("46hmruvi")
_DIG_VALUES = set("bcpqtx")
_DIG_DENIED = {
    "-f": "batch mode reads queries from a file (and would send its lines to a DNS server)",
    "-k": "TSIG key files are secrets",
    "-y": "TSIG keys are secrets",
}
_DIG_QUERY_OPTIONS = (
    "aaflag aaonly additional adflag all answer authority badcookie besteffort bufsize cdflag class cmd "
    "comments cookie crypto defname dns64prefix dnssec domain edns ednsflags ednsnegotiation ednsopt "
    "expandaaaa expire fail header-only identify idnin idnout ignore keepalive keepopen mapped "
    "multiline ndots nsid nssearch onesoa opcode padding qid qr question raflag rdflag recurse "
    "retry rrcomments search short showbadcookie showsearch split stats subnet tcflag tcp time "
    "topdown trace tries ttlid ttlunits unknownformat vc yaml zflag"
).split()


def _parse_dig(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    words = list(args)
    while words:
        word = words.pop(0)
        if word.startswith("+"):
            name = word[1:].split("=", 1)[0]
            if name.startswith("no") and name[2:] in _DIG_QUERY_OPTIONS:
                name = name[2:]
            if name not in _DIG_QUERY_OPTIONS:
                raise _refuse_option(
                    program, word.split("=", 1)[0], "unknown dig query option (write it in full)"
                )
            parsed.options.append((word, None))
        elif word.startswith("-") and len(word) > 1:
            option = word[:2]
            if option in _DIG_DENIED:
                raise _refuse_option(program, option, _DIG_DENIED[option])
            if word[1] in _DIG_FLAGS and len(word) == 2:
                parsed.options.append((option, None))
            elif word[1] in _DIG_VALUES:
                value = word[2:] or (words.pop(0) if words else None)
                if value is None:
                    raise _refuse_option(program, option, NEEDS_VALUE)
                parsed.options.append((option, value))
            else:
                raise _refuse_option(program, word)
        else:
            parsed.operands.append(word)  # @server, name, type, class
    return parsed


_NSLOOKUP_OPTIONS = {
    "type", "query", "querytype", "q", "port", "timeout", "retry", "class", "domain", "ndots", "debug",
    "nodebug", "d2", "nod2", "vc", "novc", "recurse", "norecurse", "search", "nosearch", "fail", "nofail",
}  # fmt: skip


def _parse_nslookup(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    for word in args:
        if word == "-":
            raise PolicyRefusal("nslookup -", "interactive mode reads commands from standard input")
        if word.startswith("-"):
            name = word[1:].split("=", 1)[0]
            if name not in _NSLOOKUP_OPTIONS:
                raise _refuse_option(program, word.split("=", 1)[0])
            parsed.options.append((word, None))
        else:
            parsed.operands.append(word)
    if not 1 <= len(parsed.operands) <= 2:
        raise PolicyRefusal(
            "nslookup " + " ".join(args),
            "give a name (and optionally a server): without one nslookup reads commands from standard input",
        )
    return parsed


# openssl: one subcommand, options with one dash (OpenSSL 3 also takes `--opt` and `-opt=value`),
# names matched exactly. s_client/s_server, engines, providers and output files are refused.
_OPENSSL_COMMON_DENIED = {
    "-out": _WRITES,
    "-keyout": _WRITES,
    "-engine": "loading engines runs code",
    "-provider": "loading providers runs code",
    "-provider-path": "loading providers runs code",
    "-propquery": "provider selection is not allowed",
    "-passin": "pass phrases are secrets",
    "-writerand": _WRITES,
    "-rand": "random seed files are not needed for inspection",
}
_OPENSSL_X509_VALUES = "-in -inform -nameopt -certopt -ext -checkend -checkhost -checkemail -checkip"
_OPENSSL_X509_FLAGS = (
    "-noout -text -subject -issuer -dates -startdate -enddate -serial -fingerprint -sha1 -sha256 -md5 "
    "-hash -subject_hash -issuer_hash -subject_hash_old -issuer_hash_old -email -ocspid -ocsp_uri "
    "-pubkey -modulus -purpose -alias -trustout -nocert -help"
)
_OPENSSL_COMMANDS: dict[str, tuple[str, str, str]] = {
    # subcommand: (value options, flag options, file-valued options)
    "x509": (_OPENSSL_X509_VALUES, _OPENSSL_X509_FLAGS, "-in"),
    "verify": (
        "-CAfile -CApath -untrusted -trusted -CRLfile -purpose -verify_hostname -verify_email -verify_ip "
        "-attime -verify_depth -auth_level",
        "-verbose -show_chain -crl_check -crl_check_all -x509_strict -partial_chain -no-CAfile -no-CApath "
        "-issuer_checks -check_ss_sig -no_check_time -help",
        "-CAfile -CApath -untrusted -trusted -CRLfile",
    ),
    "crl": (
        "-in -inform -nameopt -CAfile -CApath",
        "-noout -text -hash -hash_old -issuer -lastupdate -nextupdate -fingerprint -crlnumber -verify -help",
        "-in -CAfile -CApath",
    ),
    "asn1parse": ("-in -inform -offset -length -dlimit -strparse", "-i -dump -noout -help", "-in"),
    "version": ("", "-a -b -o -f -p -d -e -m -r -c -v -help", ""),
}
_OPENSSL_REFUSED = {
    "s_client": "opens a connection that can send data anywhere; use host_probe_http for certificates",
    "s_server": "starts a server",
    "s_time": "opens connections",
    "enc": "writes and decrypts data",
}


def _parse_openssl(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    if not args or args[0] not in _OPENSSL_COMMANDS:
        sub = args[0] if args else ""
        reason = _OPENSSL_REFUSED.get(sub, f"only {', '.join(sorted(_OPENSSL_COMMANDS))} are allowed")
        raise PolicyRefusal(f"openssl {sub}".strip(), reason)
    sub = args[0]
    values, flags, file_values = (set(spec.split()) for spec in _OPENSSL_COMMANDS[sub])
    words = list(args[1:])
    while words:
        word = words.pop(0)
        if not word.startswith("-") or word == "-":
            parsed.operands.append(word)
            parsed.files.append(word)
            continue
        name, has_value, value = (word[1:] if word.startswith("--") else word).partition("=")
        if name in _OPENSSL_COMMON_DENIED:
            raise _refuse_option(program, name, _OPENSSL_COMMON_DENIED[name])
        if name in flags and not has_value:
            parsed.options.append((name, None))
        elif name in values:
            if not has_value:
                if not words:
                    raise _refuse_option(program, name, NEEDS_VALUE)
                value = words.pop(0)
            parsed.options.append((name, value))
            if name in file_values:
                parsed.files.append(value)
        else:
            raise _refuse_option(
                program, name, "unknown or refused option (output files, keys, signing and code loading)"
            )
    return parsed


# lsof: `-x` and `+x` options; some take a value, some an optional one (attached, or the next
# word when it does not start with - or +).
_LSOF_FLAGS = set("abChlnNOPRtUvVwXxQHE")
_LSOF_REQUIRED = set("cdpuke")
_LSOF_OPTIONAL = set("iFgLosSTK")
_LSOF_PLUS = {"D": REQUIRED, "d": REQUIRED, "c": REQUIRED, "e": REQUIRED, "L": OPTIONAL, "f": OPTIONAL,
              "E": FLAG, "w": FLAG, "M": FLAG}  # fmt: skip
_LSOF_DENIED = {"r": "repeat mode never ends", "D": "-D builds or updates a device cache file"}


def _parse_lsof(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    words = list(args)
    while words:
        word = words.pop(0)
        if word == "--":
            parsed.operands += words
            parsed.files += words
            break
        if word.startswith("+") and len(word) > 1:
            letter = word[1]
            if letter == "r":
                raise _refuse_option(program, "+r", _LSOF_DENIED["r"])
            arity = _LSOF_PLUS.get(letter)
            if arity is None:
                raise _refuse_option(program, word[:2])
            value = word[2:] or None
            if arity == REQUIRED and value is None:
                if not words:
                    raise _refuse_option(program, word, NEEDS_VALUE)
                value = words.pop(0)
            if letter in "Dd" and value is not None:
                parsed.files.append(value)
            parsed.options.append(("+" + letter, value))
            continue
        if not word.startswith("-") or word == "-":
            parsed.operands.append(word)
            parsed.files.append(word)
            continue
        for position, letter in enumerate(word[1:], start=1):
            if letter in _LSOF_DENIED:
                raise _refuse_option(program, "-" + letter, _LSOF_DENIED[letter])
            if letter in _LSOF_FLAGS:
                parsed.options.append(("-" + letter, None))
                continue
            if letter not in _LSOF_REQUIRED | _LSOF_OPTIONAL:
                raise _refuse_option(program, "-" + letter)
            value = word[position + 1 :] or None
            if value is None and words and (letter in _LSOF_REQUIRED or not words[0].startswith(("-", "+"))):
                value = words.pop(0)
            if value is None and letter in _LSOF_REQUIRED:
                raise _refuse_option(program, "-" + letter, NEEDS_VALUE)
            parsed.options.append(("-" + letter, value))
            break
    return parsed


def _parse_crontab(program: str, args: Sequence[str]) -> Parsed:
    parsed = Parsed(program)
    words = list(args)
    if "-l" not in words:
        raise PolicyRefusal("crontab " + " ".join(words), "only listing (`crontab -l`) is allowed")
    while words:
        word = words.pop(0)
        if word == "-u" and words:
            parsed.options.append((word, words.pop(0)))
        elif word == "-l":
            parsed.options.append((word, None))
        else:
            raise PolicyRefusal(f"crontab {word}", "only `-l` and `-u USER` are allowed")
    return parsed


_HOSTNAME_FLAGS = {
    "-f", "-s", "-i", "-I", "-d", "-a", "-A", "-y", "--fqdn", "--long", "--short", "--ip-address",
    "--all-ip-addresses", "--domain", "--alias", "--all-fqdns", "--help", "--version",
}  # fmt: skip


def _parse_hostname(program: str, args: Sequence[str]) -> Parsed:
    for word in args:
        if word not in _HOSTNAME_FLAGS:
            raise PolicyRefusal(
                f"hostname {word}", "only display options are allowed; other arguments set the name"
            )
    return Parsed(program, options=[(word, None) for word in args])


def _parse_echo(program: str, args: Sequence[str]) -> Parsed:
    return Parsed(program, operands=list(args))


# --- the allowlist: every program with its grammar ----------------------------------------------

_GREP = Grammar(
    "EFGPe:f:iywxvcm:bnHhqsoaIrd:D:lLTZzA:B:C:U0123456789",
    "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case no-ignore-case "
    "word-regexp line-regexp null-data no-messages invert-match max-count= byte-offset line-number "
    "line-buffered with-filename no-filename label= only-matching quiet silent binary-files= text "
    "directories= devices= recursive include= exclude= exclude-from= exclude-dir= files-without-match "
    "files-with-matches count initial-tab null before-context= after-context= context= color? colour? "
    "binary no-group-separator group-separator=",
    denied={
        "-R": "-R follows symbolic links anywhere; use -r",
        "--dereference-recursive": "-R follows symbolic links anywhere; use -r",
    },
    files=("-f", "--file", "--exclude-from"),
    operands="data",  # the pattern; _grep marks the paths
    rule=_grep,
)
_SUMS = Grammar("bctwz", "binary check tag text zero ignore-missing quiet status strict warn")
_TAIL_DENIED = {name: _FOLLOW for name in ("-f", "-F", "--follow", "--retry", "--pid")}

_JOURNAL_LINES = r"\+?\d+|all"
_JOURNAL_BOOT = r"[+-]?\d+|[0-9a-fA-F]{32}([+-]\d+)?|all"

PROGRAMS: dict[str, Grammar | Custom] = {
    # files and text
    "ls": Grammar(
        "aAbBcCdDfFgGhHiI:klLmnNopqQrRsStT:uUvw:xXZ1",
        "all almost-all author escape block-size= ignore-backups color? directory dired classify? "
        "file-type format= full-time group-directories-first no-group human-readable si "
        "dereference-command-line dereference-command-line-symlink-to-dir hide= hyperlink? "
        "indicator-style= inode ignore= kibibytes dereference literal numeric-uid-gid "
        "hide-control-chars show-control-chars quote-name quoting-style= reverse recursive size sort= "
        "time= time-style= tabsize= width= context zero",
        rule=_ls,
    ),
    "cat": Grammar(
        "AbeEnstTuv", "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting"
    ),
    "head": Grammar("c:n:qvz", "bytes= lines= quiet silent verbose zero-terminated", numeric=True),
    "tail": Grammar(
        "c:n:qs:vz",
        "bytes= lines= quiet silent sleep-interval= verbose zero-terminated debug",
        denied=_TAIL_DENIED,
        numeric=True,
    ),
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "zgrep": _GREP,
    "zcat": Grammar("fhlLqtvV", "force list license quiet test verbose"),
    "wc": Grammar(
        "clLmw", "bytes chars lines max-line-length words files0-from= total=", files=("--files0-from",)
    ),
    "sort": Grammar(
        "bcCdfghiMmnrRsS:t:uVzk:",
        "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting "
        "month-sort human-numeric-sort numeric-sort random-sort random-source= reverse sort= "
        "version-sort check? debug files0-from= key= merge stable buffer-size= field-separator= unique "
        "zero-terminated parallel=",
        denied={
            "-o": _WRITES,
            "--output": _WRITES,
            "--compress-program": _RUNS,
            "-T": "temporary files are written there",
            "--temporary-directory": "temporary files are written there",
            "--batch-size": "only useful with temporary files",
        },
        files=("--random-source", "--files0-from"),
    ),
    "uniq": Grammar(
        "cdDf:is:uw:z",
        "count repeated all-repeated? skip-fields= ignore-case skip-chars= unique zero-terminated "
        "check-chars= group?",
        rule=_uniq,
    ),
    "cut": Grammar(
        "b:c:d:f:nsz",
        "bytes= characters= delimiter= fields= complement only-delimited output-delimiter= zero-terminated",
    ),
    "tr": Grammar("cCdst", "complement delete squeeze-repeats truncate-set1", operands="data"),
    "tac": Grammar("brs:", "before regex separator="),
    "nl": Grammar(
        "b:d:f:h:i:l:n:ps:v:w:",
        "body-numbering= section-delimiter= footer-numbering= header-numbering= line-increment= "
        "join-blank-lines= number-format= no-renumber number-separator= starting-line-number= number-width=",
    ),
    "stat": Grammar("Lfc:t", "dereference file-system format= printf= terse cached="),
    "file": Grammar(
        "bcde:EF:f:hiklLm:nNrsSvzZ0P:",
        "brief checking-printout exclude= exclude-quiet= extension separator= files-from= no-dereference "
        "dereference mime mime-type mime-encoding keep-going list magic-file= no-buffer no-pad print0 "
        "raw special-files uncompress uncompress-noreport parameter= apple",
        denied={
            "-C": "compiling a magic file writes it",
            "--compile": "compiling a magic file writes it",
            "-p": "restoring access times writes to the file's metadata",
            "--preserve-date": "restoring access times writes to the file's metadata",
        },
        files=("-f", "--files-from", "-m", "--magic-file"),
    ),
    "readlink": Grammar(
        "efmnqsvz",
        "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero",
    ),
    "realpath": Grammar(
        "eLmPqsz",
        "canonicalize-existing canonicalize-missing logical physical quiet relative-to= relative-base= "
        "strip no-symlinks zero",
    ),
    "basename": Grammar("as:z", "multiple suffix= zero", operands="data"),
    "dirname": Grammar("z", "zero", operands="data"),
    "md5sum": _SUMS,
    "sha1sum": _SUMS,
    "sha256sum": _SUMS,
    "echo": Custom(_parse_echo),
    "find": Custom(_parse_find),
    "du": Grammar(
        "0abB:cd:DhHklLmPsStxX:",
        "null all apparent-size block-size= bytes total max-depth= human-readable inodes "
        "dereference-args dereference count-links no-dereference separate-dirs si summarize threshold= "
        "time? time-style= exclude-from= exclude= one-file-system files0-from=",
        files=("-X", "--exclude-from", "--files0-from"),
        rule=_du,
    ),
    "df": Grammar(
        "aB:hHiklPt:Tvx:",
        "all block-size= human-readable si inodes local no-sync sync output? portability print-type "
        "type= exclude-type= total",
    ),
    # processes, memory, system
    "ps": Custom(_parse_ps),
    "top": Grammar("bcHiSs1n:d:p:u:U:o:O:w::E:e:", rule=_top, operands="data"),
    "free": Grammar(
        "bkmgtphlwvLc:",
        "bytes kilo mega giga tera peta kibi mebi gibi tebi pebi human si lohi total wide committed line "
        "count=",
        denied={"-s": "repeating output never ends", "--seconds": "repeating output never ends"},
        operands="data",
        rule=_no_operands,
    ),
    "uptime": Grammar("phsV", "pretty since container", rule=_no_operands),
    "vmstat": Grammar(
        "afmnsdDp:S:twyV",
        "active forks slabs one-header stats disk disk-sum partition= unit= timestamp wide no-first",
        operands="data",
        rule=_vmstat,
    ),
    "iostat": Grammar("cdhkmNtxyzV", "human pretty compact", operands="data", rule=_numbers_need_a_count),
    "uname": Grammar(
        "asnrvmpio",
        "all kernel-name nodename kernel-release kernel-version machine processor hardware-platform "
        "operating-system",
        rule=_no_operands,
    ),
    "hostname": Custom(_parse_hostname),
    "date": Grammar(
        "d:f:I::Rr:u",
        "date= file= iso-8601? rfc-email rfc-3339= reference= universal utc debug resolution",
        denied={"-s": "setting the clock is not allowed", "--set": "setting the clock is not allowed"},
        files=("-f", "--file", "-r", "--reference"),
        operands="data",
        rule=_date,
    ),
    "id": Grammar("agGnruzZ", "context group groups name real user zero", operands="data"),
    "whoami": Grammar("", "", rule=_no_operands),
    "w": Grammar("hiusfonp", "no-header no-current short from old-style ip-addr pids", operands="data"),
    "who": Grammar(
        "abdHlmpqrstTuw",
        "all boot dead heading login lookup message process count runlevel short time mesg writable users",
    ),
    "last": Grammar(
        "adFiRwxn:t:s:p:f:0123456789",
        "hostlast dns fullnames ip limit= nohostname present= since= until= time-format= system file=",
        files=("-f", "--file"),
        operands="data",
    ),
    "nproc": Grammar("", "all ignore=", rule=_no_operands),
    "lscpu": Grammar(
        "abcBJxyVe::p::C::",
        "all bytes online offline caches? extended? json parse? hex physical output-all",
        rule=_no_operands,
    ),  # fmt: skip
    "lsblk": Grammar(
        "abdDfhJlnmo:OpPrSst:TzxeI:M:E:x:",
        "all bytes nodeps discard fs json list merge noheadings output= output-all paths pairs raw inverse "
        "topology scsi sort= tree? width= zoned exclude= include= perms",
        operands="data",
    ),
    "findmnt": Grammar(
        "AabcDdeFfhikJlMmNnOo:PRrSsTtUuvwx",
        "all ascii bytes canonicalize df evaluate first-only fstab invert json kernel list mountpoint= "
        "mtab noheadings notruncate options= output= output-all pairs raw real pseudo source= submounts "
        "target= types= nofsroot uniq verbose verify",
        denied={"-p": "polling never ends", "--poll": "polling never ends"},
        operands="data",
    ),
    "lsof": Custom(_parse_lsof),
    "sysctl": Grammar(
        "abeNnqXx:Ar:",
        "all binary ignore names values quiet pattern=",
        denied={
            name: "changing kernel settings is not allowed"
            for name in ("-w", "--write", "-p", "--load", "-f", "--system")
        },
        operands="data",
        rule=_sysctl,
    ),
    "getent": Grammar("s:i", "service= no-idn", operands="data", rule=_getent),
    "crontab": Custom(_parse_crontab),
    # logs and services
    "journalctl": Grammar(
        "hean::qmb::klrxNo:D:p:g:c:S:U:t:T:u:F:I::",
        "no-pager pager-end output= all lines? reverse quiet merge this-boot boot? list-boots dmesg system "
        "user user-unit= directory= file= namespace= header identifier= exclude-identifier= priority= "
        "facility= grep= case-sensitive? verify disk-usage cursor= after-cursor= show-cursor since= until= "
        "unit= field= fields catalog list-catalog dump-catalog new-id128 utc no-hostname no-full full "
        "output-fields= list-namespaces invocation? truncate-newline no-tail list-fields",
        denied={
            **{name: _FOLLOW for name in ("-f", "--follow")},
            **{
                name: "this option changes the journal or its keys"
                for name in (
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
                    "--interval",
                    "--verify-key",
                    "--force",
                )
            },  # fmt: skip
            "--cursor-file": "the cursor file is written",
            **{name: _OTHER_HOST for name in ("-M", "--machine", "--root", "--image", "--image-policy")},
        },
        files=("-D", "--directory", "--file"),
        operands="data",
        lookahead={
            "-n": _JOURNAL_LINES,
            "--lines": _JOURNAL_LINES,
            "-b": _JOURNAL_BOOT,
            "--boot": _JOURNAL_BOOT,
        },
    ),
    "dmesg": Grammar(
        "dF:f:HhkL::l:PprSs:TtuxJ",
        "show-delta reltime file= facility= human kernel color? level= nopager force-prefix raw syslog "
        "buffer-size= ctime notime userspace decode time-format= json since= until=",
        denied={
            **{
                name: "this option clears the ring buffer or changes the console"
                for name in (
                    "-C",
                    "--clear",
                    "-c",
                    "--read-clear",
                    "-D",
                    "--console-off",
                    "-E",
                    "--console-on",
                    "-n",
                    "--console-level",
                )
            },  # fmt: skip
            **{name: _FOLLOW for name in ("-w", "--follow", "-W", "--follow-new")},
        },
        files=("-F", "--file"),
        rule=_no_operands,
    ),
    "systemctl": Grammar(
        "t:p:P:arqln:o:",
        "type= property= all recursive reverse after before show-types value user system no-legend "
        "no-pager quiet full lines= output= plain state= failed legend= with-dependencies timestamp= "
        "no-warn",
        denied={
            **{name: _OTHER_HOST for name in ("-H", "--host", "-M", "--machine", "--root", "--image")},
            **{
                name: "this option only matters to verbs that change the system"
                for name in (
                    "--kill-whom",
                    "--kill-value",
                    "-s",
                    "--signal",
                    "--message",
                    "-f",
                    "--force",
                    "--now",
                    "--runtime",
                    "--job-mode",
                    "--no-block",
                    "--wait",
                    "--preset-mode",
                    "--reboot-argument",
                    "--boot-loader-entry",
                    "--boot-loader-menu",
                    "--firmware-setup",
                    "--drop-in",
                    "--when",
                    "--mkdir",
                    "--what",
                    "-i",
                    "--ignore-inhibitors",
                    "--check-inhibitors",
                    "--dry-run",
                    "--global",
                    "--marked",
                    "--read-only",
                    "-T",
                    "--show-transaction",
                )
            },  # fmt: skip
        },
        operands="data",
        rule=_systemctl,
    ),
    # network
    "ss": Grammar(
        "hVHOnraloemipTsZzb460tudwxSMf:A:F:",
        "help version no-header oneline numeric resolve all listening options extended memory processes "
        "info threads summary context contexts bpf tcp udp dccp raw unix sctp packet xdp vsock tipc mptcp "
        "family= query= socket= filter= ipv4 ipv6 cgroup tos inet-sockopt",
        denied={
            "-K": "killing sockets is not allowed",
            "--kill": "killing sockets is not allowed",
            "-D": "--diag writes a raw dump to a file",
            "--diag": "--diag writes a raw dump to a file",
            "-E": "--events never ends",
            "--events": "--events never ends",
            "-N": "switching network namespaces is not allowed",
            "--net": "switching network namespaces is not allowed",
        },
        files=("-F", "--filter"),
        operands="data",
    ),
    "netstat": Grammar(
        "rigsMvWnNeoplaFCtuwx46A:",
        "route interfaces groups statistics masquerade verbose wide numeric numeric-hosts numeric-ports "
        "numeric-users symbolic extend programs timers listening all fib cache tcp udp udplite sctp raw "
        "unix inet inet6 protocol=",
        denied={"-c": "continuous output never ends", "--continuous": "continuous output never ends"},
        operands="data",
        rule=_no_operands,
    ),
    "ip": Custom(_parse_ip),
    "dig": Custom(_parse_dig),
    "host": Grammar("aACdlnrsTUwvV46c:N:m:p:R:t:W:", "", operands="data"),
    "nslookup": Custom(_parse_nslookup),
    "openssl": Custom(_parse_openssl),
}


# --- secret stores: refused on every transport, after normalisation --------------------------------

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
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def _check_secret_word(word: str) -> None:
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


def _check_recursive_root(program: str, root: str) -> None:
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


# --- the Ongrid host (local transport) ----------------------------------------------------------------


def resolve_local(path: str) -> tuple[str, str]:
    """(textual normal form, real path) of a path on the Ongrid host: symbolic links and the
    /proc/*/root, /proc/*/cwd style links are followed as the kernel would."""
    normal = normalise(path)
    try:
        real = os.path.realpath(normal)
    except (OSError, ValueError):
        real = normal
    return normal, real


def protected_roots(protected: Sequence[str]) -> list[str]:
    roots: list[str] = []
    for folder in protected:
        for form in resolve_local(folder):
            if form not in roots:
                roots.append(form)
    return roots


def check_local_path(path: str, roots: Sequence[str], what: str = "") -> None:
    """Refuse a path on the Ongrid host that resolves into one of `roots` (see `protected_roots`)."""
    for form in resolve_local(path):
        for root in roots:
            if inside(form, root):
                raise PolicyRefusal(
                    what or path,
                    f"{root} is off limits on the Ongrid host: Ongrid's own data folder, code, virtualenv, "
                    "/proc and /sys hold its database and secrets",
                )


def check_local_walk(program: str, root: str, roots: Sequence[str]) -> None:
    """Refuse a recursive read on the Ongrid host whose root contains a protected folder."""
    check_local_path(root, roots, what=f"{program} {root}")
    for form in resolve_local(root):
        for protected in roots:
            if inside(protected, form):
                raise PolicyRefusal(
                    f"{program} {root}",
                    f"the recursive read would cover {protected}, which is off limits on the Ongrid host "
                    "(Ongrid's own data folder, code, virtualenv, /proc, /sys); pick a directory that does "
                    "not contain it",
                )


# --- the check --------------------------------------------------------------------------------------

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_VARIABLE = re.compile(r"\$(\{[^}]*\}?|\w+|[@*#?$!-])")


def check(command_line: str, protected: Sequence[str] = ()) -> Script:
    """Return the Script to run for `command_line`, or raise PolicyRefusal saying what and why.

    `protected` lists absolute directories of the Ongrid host no argument may resolve into, nor
    a recursive read cover: the local transport passes Ongrid's data, code and virtualenv folders
    with /proc and /sys. With it, paths are resolved on this machine (symbolic links included)."""
    _check_raw(command_line)
    tokens = _lex(command_line)
    pipelines, operators = _split(tokens)
    stages = sum(len(p) for p in pipelines)
    if stages > MAX_STAGES:
        raise PolicyRefusal(command_line[:60], f"at most {MAX_STAGES} commands per line")
    roots = protected_roots(protected)
    for pipeline in pipelines:
        for argv in pipeline:
            parsed = parse_command(argv)
            if roots:
                _check_local(parsed, argv, roots)
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


@dataclass(frozen=True)
class Token:
    text: str
    operator: bool = False


def _lex(line: str) -> list[Token]:
    """Split a command line as a POSIX shell would: quotes and backslashes make data, and only
    unquoted runs of `();<>|&` are operators."""
    tokens: list[Token] = []
    word: list[str] = []
    started = False
    index, length = 0, len(line)

    def flush() -> None:
        nonlocal started
        if started:
            tokens.append(Token("".join(word)))
        word.clear()
        started = False

    while index < length:
        char = line[index]
        if char in " \t":
            flush()
            index += 1
        elif char in PUNCTUATION:
            flush()
            end = index
            while end < length and line[end] in PUNCTUATION:
                end += 1
            tokens.append(Token(line[index:end], operator=True))
            index = end
        elif char == "'":
            end = line.find("'", index + 1)
            if end < 0:
                raise PolicyRefusal(line[index:][:40], "cannot parse the command line (no closing quotation)")
            word.append(line[index + 1 : end])
            started, index = True, end + 1
        elif char == '"':
            started, index = True, index + 1
            while True:
                if index >= length:
                    raise PolicyRefusal(line[-40:], "cannot parse the command line (no closing quotation)")
                char = line[index]
                if char == '"':
                    index += 1
                    break
                if char == "\\" and index + 1 < length and line[index + 1] in '$`"\\':
                    word.append(line[index + 1])
                    index += 2
                    continue
                word.append(char)
                index += 1
        elif char == "\\":
            if index + 1 >= length:
                raise PolicyRefusal("\\", "cannot parse the command line (it ends with a backslash)")
            word.append(line[index + 1])
            started, index = True, index + 2
        else:
            word.append(char)
            started, index = True, index + 1
    flush()
    return tokens


def _split(tokens: Sequence[Token]) -> tuple[list[list[list[str]]], list[str]]:
    """Group tokens into pipelines of commands; refuse every operator except | ; && ||."""
    pipelines: list[list[list[str]]] = [[[]]]
    operators: list[str] = []
    for token in tokens:
        if not token.operator:
            pipelines[-1][-1].append(token.text)
            continue
        text = token.text
        if text == "|":
            if not pipelines[-1][-1]:
                raise PolicyRefusal("|", "a pipe needs a command on both sides")
            pipelines[-1].append([])
        elif text in CHAIN_OPERATORS:
            if not pipelines[-1][-1]:
                raise PolicyRefusal(text, f"`{text}` needs a command before it")
            operators.append(text)
            pipelines.append([[]])
        else:
            raise PolicyRefusal(text, _operator_reason(text))
    if not pipelines[-1][-1]:
        if operators and operators[-1] == ";" and len(pipelines[-1]) == 1:
            pipelines.pop()
            operators.pop()
        else:
            raise PolicyRefusal(tokens[-1].text if tokens else "", "the command line ends without a command")
    return pipelines, operators


def _operator_reason(token: str) -> str:
    if "<" in token or ">" in token:
        return "redirections are not allowed (they read or write files outside the policy)"
    if token.startswith("|&") or token.endswith("|&"):
        return "`|&` is not allowed; use a plain pipe"
    if "(" in token or ")" in token:
        return "subshells and grouping are not allowed (quote a literal parenthesis)"
    if "&" in token:
        return "background jobs are not allowed"
    return "this shell operator is not allowed"


def parse_command(argv: Sequence[str]) -> Parsed:
    """Check one command on every transport and return it parsed, or raise PolicyRefusal."""
    program, args = argv[0], list(argv[1:])
    if _ASSIGNMENT.match(program):
        raise PolicyRefusal(program, "environment assignments before a command are not allowed")
    if "/" in program:
        raise PolicyRefusal(program, "give the program's name, not a path")
    if program in REFUSED_PROGRAMS:
        raise PolicyRefusal(program, f"`{program}` {REFUSED_PROGRAMS[program]}")
    grammar = PROGRAMS.get(program)
    if grammar is None:
        raise PolicyRefusal(program, f"`{program}` is not on the list of read-only inspection programs")
    for word in args:
        _check_secret_word(word)
        if word.startswith("-") and "=" in word:
            _check_secret_word(word.partition("=")[2])
    parsed = grammar.parse(program, args)
    for value in parsed.files:
        _check_secret_word(value)
    for root, contents in parsed.recursive:
        if contents:
            _check_recursive_root(program, root)
    return parsed


def _check_local(parsed: Parsed, argv: Sequence[str], roots: Sequence[str]) -> None:
    """On the Ongrid host: every path (file words, and any word starting with /) must resolve
    outside the protected folders, and no recursive read may be rooted above one of them."""
    words = list(parsed.files)
    for word in argv[1:]:
        value = word.partition("=")[2] if word.startswith("-") and "=" in word else word
        if value.startswith("/"):
            words.append(value)
    for word in words:
        check_local_path(word, roots)
    for root, _ in parsed.recursive:
        if parsed.follows_links:
            raise PolicyRefusal(
                f"{parsed.program} {root}",
                "on the Ongrid host a recursive read may not follow symbolic links",
            )
        check_local_walk(parsed.program, root, roots)


def allowed_programs() -> list[str]:
    return sorted(PROGRAMS)
