"""programs/text.py: grep and the filters of a pipeline."""

from __future__ import annotations

from tests.support.shell_policy import policy_table

ALLOWED = [
    ("grep -i 'out of memory' /var/log/kern.log", [["grep", "-i", "out of memory", "/var/log/kern.log"]]),
    ('grep -E "a|b" app.log', [["grep", "-E", "a|b", "app.log"]]),
    ("grep -c 'timeout$' /var/log/app.log", None),
    ("grep -rn 'connection refused' /var/log/nginx", None),
    ("grep -e timeout -r /var/log/app /srv/logs", None),
    ("grep --include=*.log -rl error /var/log/app", None),
    ("grep -A3 -B 2 --context=1 error /var/log/syslog", None),
    ("grep --color=never -o 'id=[0-9]*' x", None),
    ("grep -5 x /var/log/syslog", None),
    ("grep -F '|' x", [["grep", "-F", "|", "x"]]),
    ("egrep 'a|b' /var/log/syslog", None),
    ("fgrep -x 'exact line' /var/log/syslog", None),
    ("zgrep -i error /var/log/syslog.2.gz", None),
    ("wc -l /var/log/syslog", None),
    ("wc -c --files0-from=list", None),
    ("sort -rn sizes.txt", None),
    ("sort -t, -k2n data.csv", None),
    ("sort -to file", [["sort", "-to", "file"]]),
    ("sort --key=2 -u x", None),
    ("uniq -c", [["uniq", "-c"]]),
    ("uniq -f 1 file", [["uniq", "-f", "1", "file"]]),
    ("cut -d: -f1 /etc/passwd", None),
    ("cut -d '|' -f 2 /etc/x", [["cut", "-d", "|", "-f", "2", "/etc/x"]]),
    ("cut --delimiter=, --fields=2 x", None),
    ("tr a-z A-Z", None),
    ("tr -d '\\r'", [["tr", "-d", "\\r"]]),
    ("tac /var/log/syslog", None),
    ("nl -ba /etc/hosts", None),
    ("echo 'a > b; c'", [["echo", "a > b; c"]]),
    ("echo -n hi", None),
    ("echo --anything goes", [["echo", "--anything", "goes"]]),
]

REFUSED = [
    ("grep", "`grep`: grep needs a pattern"),
    ("grep -R x /var/log", "`grep -R`: -R follows symbolic links anywhere; use -r"),
    ("grep --dereference-recursive x /var/log", "`grep --dereference-recursive`"),
    ("grep --recursive x", "`grep -r`: name the directories to search"),
    ("grep -Q x y", "`grep -Q`: unknown option"),
    ("grep --regex=x y", "`grep --regex`: abbreviated options are not accepted; write `--regexp`"),
    ("egrep -R x /var", "`egrep -R`"),
    ("fgrep --recursive x", "`fgrep -r`: name the directories"),
    ("zgrep -d recurse x /", "`zgrep -r /`"),
    ("wc --files0-from=/etc/shadow", "password hashes"),
    ("wc -x y", "`wc -x`: unknown option"),
    ("sort -o /etc/passwd x", "`sort -o`: this option writes a file"),
    ("sort --output=/tmp/x f", "`sort --output`"),
    ("sort --out=x y", "`sort --out`: this option writes a file"),
    ("sort -no out x", "`sort -o`"),
    ("sort -T /tmp x", "`sort -T`: temporary files are written there"),
    ("sort --temporary-directory=/tmp x", "`sort --temporary-directory`"),
    ("sort --compress-program=gzip x", "`sort --compress-program`: this option runs another program"),
    ("sort --batch-size=2 x", "`sort --batch-size`: only useful with temporary files"),
    (
        "uniq in.txt out.txt",
        "`uniq in.txt out.txt`: a second file name is an output file uniq would overwrite",
    ),
    ("cut -x y", "`cut -x`: unknown option"),
    ("tr -x a b", "`tr -x`: unknown option"),
    ("tac -x y", "`tac -x`: unknown option"),
    ("nl -x y", "`nl -x`: unknown option"),
    ("echo $(id)", "command substitution"),
    ("echo hi > /etc/motd", "redirections"),
    ("echo /etc/shadow", "password hashes"),
]

test_allowed, test_refused = policy_table(ALLOWED, REFUSED)
