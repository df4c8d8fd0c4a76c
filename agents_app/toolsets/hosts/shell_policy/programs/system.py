"""Programs that describe the machine, its users, clock, kernel settings and schedules.

Many of them also *set* what they show (`date`, `hostname`, `sysctl`, `crontab`): only their
display forms are accepted.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..grammar import Custom, Grammar, Parsed
from ..refusal import PolicyRefusal
from .common import no_operands


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


PROGRAMS: dict[str, Grammar | Custom] = {
    "uname": Grammar(
        "asnrvmpio",
        "all kernel-name nodename kernel-release kernel-version machine processor hardware-platform "
        "operating-system",
        rule=no_operands,
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
    "whoami": Grammar("", "", rule=no_operands),
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
    "nproc": Grammar("", "all ignore=", rule=no_operands),
    "lscpu": Grammar(
        "abcBJxyVe::p::C::",
        "all bytes online offline caches? extended? json parse? hex physical output-all",
        rule=no_operands,
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
}
