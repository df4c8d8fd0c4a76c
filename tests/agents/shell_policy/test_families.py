"""Refused families: well-known programs that write, run other programs, change users, reach the
network... are refused by name with what they would do, however the name is spelled."""

from __future__ import annotations

import pytest

from agents_app.toolsets.hosts.shell_policy import PROGRAMS
from agents_app.toolsets.hosts.shell_policy.families import REFUSED_FAMILIES, REFUSED_PROGRAMS
from tests.support.shell_policy import assert_refused, policy_table

EVERY_REFUSED_PROGRAM = sorted(REFUSED_PROGRAMS.items())


@pytest.mark.parametrize("program,reason", EVERY_REFUSED_PROGRAM, ids=[p for p, _ in EVERY_REFUSED_PROGRAM])
def test_every_refused_program_says_what_it_would_do(program, reason):
    assert_refused(f"{program} --help", f"refused `{program}`: `{program}` {reason}")


def test_no_program_is_both_refused_and_allowed():
    assert set(REFUSED_PROGRAMS) & set(PROGRAMS) == set()
    assert sum(len(programs) for programs in REFUSED_FAMILIES.values()) == len(REFUSED_PROGRAMS)


ALLOWED = [
    # an assignment-looking word after the program is only an operand
    ("ls X=1", [["ls", "X=1"]]),
]

REFUSED = [
    # one row per family, with a typical command
    ("rm -rf /", "`rm`: `rm` deletes files"),
    ("cp /etc/hosts /tmp/h", "`cp`: `cp` writes or moves files"),
    ("git log", "`git` writes or moves files"),
    ("sed -n 1p file", "`sed` is a scripting language that can write files and run programs"),
    ("jq . f.json", "`jq` is a scripting language"),
    ("bash -c ls", "`bash` starts a shell, which would bypass this policy"),
    ("busybox ls", "`busybox` starts a shell"),
    ("sudo -u root ls", "`sudo` runs as another user"),
    ("env ls", "`env` runs another program, which would bypass this policy"),
    ("command ls", "`command` runs another program"),
    (". /tmp/x", "`.` runs another program"),
    ("chmod 777 /etc", "`chmod` changes permissions or ownership"),
    ("kill -9 1", "`kill` signals or stops processes"),
    ("reboot", "`reboot` stops or reconfigures the host"),
    ("mount", "`mount` changes disks or mounts"),
    ("apt list --installed", "`apt` installs or removes software"),
    ("passwd", "`passwd` changes accounts"),
    ("iptables -L", "`iptables` changes the firewall or network"),
    ("curl -X POST http://x", "`curl` opens connections that can send or store data"),
    ("less /var/log/syslog", "`less` is interactive and would hang"),
    ("docker ps", "`docker` can change containers or clusters and is not on the read-only list"),
    ("service nginx status", "`service` can restart services; use `systemctl status` to inspect them"),
    # in a pipeline or a chain, any stage
    ("ps aux | xargs kill", "`xargs`"),
    ("ls | sh", "`sh`"),
    ("ls && python3 -c x", "`python3`"),
    ("df || shutdown -h now", "`shutdown`"),
    # by path, by assignment, by another name
    ("/bin/rm -rf /", "`/bin/rm`: give the program's name, not a path"),
    ("/bin/ls", "`/bin/ls`: give the program's name"),
    ("./ls", "`./ls`: give the program's name"),
    ("X=1 ls", "`X=1`: environment assignments before a command are not allowed"),
    ("LD_PRELOAD=/tmp/evil.so cat /etc/hosts", "environment assignments"),
    ("_X= ls", "environment assignments"),
    ("'X=1' ls", "environment assignments"),
    ("1X=1 ls", "`1X=1` is not on the list of read-only inspection programs"),
    ("RM x", "`RM` is not on the list"),
    ("nosuchtool --version", "`nosuchtool` is not on the list of read-only inspection programs"),
]

test_allowed, test_refused = policy_table(ALLOWED, REFUSED)
