"""programs/find.py: find's expression, read primary by primary."""

from __future__ import annotations

from tests.support.shell_policy import policy_table

ALLOWED = [
    ("find /var/log -name '*.gz' -size +100M", [["find", "/var/log", "-name", "*.gz", "-size", "+100M"]]),
    ("find / -xdev -type f -mtime -1 -printf '%s %p\\n'", None),
    ("find /var/log -type f \\( -name '*.log' -o -name '*.gz' \\) -ls", None),
    ("find /var/log -newermt 2024-01-01 -print", None),
    ("find /var/log /srv/logs -maxdepth 2 -type d", None),
    ("find -H /var/log -name x", None),
    ("find -O2 /var/log -empty", None),
    ("find -D tree /var/log", [["find", "-D", "tree", "/var/log"]]),
    ("find /var/log ! -name '*.gz' -prune", None),
    ("find /var/log -newer /var/log/syslog", None),
    ("find", [["find"]]),
]

REFUSED = [
    ("find / -name core -delete", "`find -delete`: this action deletes, writes files or runs programs"),
    ("find /tmp -exec rm {} ;", "`find -exec`"),
    ("find /tmp -exec rm {} \\;", "`find -exec`"),
    ("find /tmp -execdir ls {} +", "`find -execdir`"),
    ("find / -ok rm {} \\;", "`find -ok`"),
    ("find / -okdir rm {} \\;", "`find -okdir`"),
    ("find / -fprint /tmp/list", "`find -fprint`"),
    ("find / -fprint0 /tmp/list", "`find -fprint0`"),
    ("find / -fprintf /tmp/list %p", "`find -fprintf`"),
    ("find / -fls /tmp/list", "`find -fls`"),
    ("find / -name x -o -exec rm {} +", "`find -exec`"),
    ("find /var/log /etc/x -delete", "`find -delete`"),
    ("find / -newer x -fprint y", "`find -fprint`"),
    ("find / -name", "`find -name`: this option needs a value"),
    ("find -D", "`find -D`: this option needs a value"),
    ("find / -foo", "`find -foo`: unknown find primary (or a path after the expression)"),
    ("find / -name x /etc", "`find /etc`: unknown find primary"),
    ("find / -samefile /etc/shadow", "password hashes"),
    ("find / -newer /root/.ssh/id_rsa", "private SSH keys"),
]

test_allowed, test_refused = policy_table(ALLOWED, REFUSED)
