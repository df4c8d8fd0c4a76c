"""Logs and services: journalctl, dmesg and systemctl.

Each of them mixes read and write verbs or options (vacuuming the journal, clearing the ring
buffer, restarting units) and can reach other machines: only reading this host is accepted.
"""

from __future__ import annotations

from ..grammar import Custom, Grammar, Parsed
from ..refusal import PolicyRefusal
from .common import FOLLOW, OTHER_HOST, no_operands

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


_JOURNAL_LINES = r"\+?\d+|all"
_JOURNAL_BOOT = r"[+-]?\d+|[0-9a-fA-F]{32}([+-]\d+)?|all"


PROGRAMS: dict[str, Grammar | Custom] = {
    "journalctl": Grammar(
        "hean::qmb::klrxNo:D:p:g:c:S:U:t:T:u:F:I::",
        "no-pager pager-end output= all lines? reverse quiet merge this-boot boot? list-boots dmesg system "
        "user user-unit= directory= file= namespace= header identifier= exclude-identifier= priority= "
        "facility= grep= case-sensitive? verify disk-usage cursor= after-cursor= show-cursor since= until= "
        "unit= field= fields catalog list-catalog dump-catalog new-id128 utc no-hostname no-full full "
        "output-fields= list-namespaces invocation? truncate-newline no-tail list-fields",
        denied={
            **{name: FOLLOW for name in ("-f", "--follow")},
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
            **{name: OTHER_HOST for name in ("-M", "--machine", "--root", "--image", "--image-policy")},
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
            **{name: FOLLOW for name in ("-w", "--follow", "-W", "--follow-new")},
        },
        files=("-F", "--file"),
        rule=no_operands,
    ),
    "systemctl": Grammar(
        "t:p:P:arqln:o:",
        "type= property= all recursive reverse after before show-types value user system no-legend "
        "no-pager quiet full lines= output= plain state= failed legend= with-dependencies timestamp= "
        "no-warn",
        denied={
            **{name: OTHER_HOST for name in ("-H", "--host", "-M", "--machine", "--root", "--image")},
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
}
