"""The host_bash read-only policy: a table of real command lines, and a property over generated ones."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents_app.shell_policy import PROGRAMS, PolicyRefusal, check

ALLOWED = [
    ("ls -la /var/log", [["ls", "-la", "/var/log"]]),
    ("df -h", [["df", "-h"]]),
    ("df -i /", [["df", "-i", "/"]]),
    ("du -sh /var/lib/docker", [["du", "-sh", "/var/lib/docker"]]),
    ("free -m", [["free", "-m"]]),
    ("uptime", [["uptime"]]),
    ("uname -a", [["uname", "-a"]]),
    ("cat /etc/os-release", [["cat", "/etc/os-release"]]),
    ("head -n 20 /var/log/syslog", [["head", "-n", "20", "/var/log/syslog"]]),
    ("tail -n 100 /var/log/nginx/error.log", [["tail", "-n", "100", "/var/log/nginx/error.log"]]),
    ("grep -i 'out of memory' /var/log/kern.log", [["grep", "-i", "out of memory", "/var/log/kern.log"]]),
    ('grep -E "a|b" app.log', [["grep", "-E", "a|b", "app.log"]]),
    ("grep -c 'timeout$' /var/log/app.log", [["grep", "-c", "timeout$", "/var/log/app.log"]]),
    ("find /var/log -name '*.gz' -size +100M", [["find", "/var/log", "-name", "*.gz", "-size", "+100M"]]),
    ("find / -xdev -type f -mtime -1 -printf '%s %p\\n'", None),
    ("ps aux", [["ps", "aux"]]),
    ("ps -eo pid,user,pcpu,comm --sort=-pcpu", None),
    ("ss -tlnp", [["ss", "-tlnp"]]),
    ("ss -s", [["ss", "-s"]]),
    ("ip addr show", [["ip", "addr", "show"]]),
    ("ip -br a", [["ip", "-br", "a"]]),
    ("ip route get 1.1.1.1", [["ip", "route", "get", "1.1.1.1"]]),
    ("ip -s link", [["ip", "-s", "link"]]),
    ("journalctl -u nginx -n 50 --no-pager", None),
    ("journalctl --since '1 hour ago' -p err", [["journalctl", "--since", "1 hour ago", "-p", "err"]]),
    ("dmesg -T", [["dmesg", "-T"]]),
    ("dmesg --level=err,warn", None),
    ("systemctl status nginx", [["systemctl", "status", "nginx"]]),
    ("systemctl is-active postgresql", None),
    ("systemctl list-units --failed", None),
    ("systemctl --no-pager -t service list-units", None),
    ("systemctl", [["systemctl"]]),
    ("stat /etc/hosts", [["stat", "/etc/hosts"]]),
    ("wc -l /var/log/syslog", None),
    ("sort -rn sizes.txt", None),
    ("uniq -c", [["uniq", "-c"]]),
    ("date +%s", [["date", "+%s"]]),
    ("date -u", [["date", "-u"]]),
    ("hostname -f", [["hostname", "-f"]]),
    ("crontab -l", [["crontab", "-l"]]),
    ("sysctl vm.swappiness", [["sysctl", "vm.swappiness"]]),
    ("vmstat 1 5", [["vmstat", "1", "5"]]),
    ("top -b -n 1", [["top", "-b", "-n", "1"]]),
    ("openssl x509 -in /etc/ssl/certs/site.pem -noout -enddate", None),
    ("lsof -nP -i :443", None),
    ("ps aux | grep nginx | wc -l", [["ps", "aux"], ["grep", "nginx"], ["wc", "-l"]]),
    ("du -x -d1 /var | sort -rn | head -n 5", None),
    ("journalctl -k | tail -n 20", None),
    ("df -h; free -m", None),
    ("ls /etc/nginx && cat /etc/nginx/nginx.conf", None),
    ("ls /nope || ls /tmp", None),
    ("ls;", [["ls"]]),
    ("grep -rn 'connection refused' /var/log/nginx", None),
    ("grep -e timeout -r /var/log/app /srv/logs", None),
]

REFUSED = [
    # (command line, fragment of the refusal that must be named)
    ("echo hi > /etc/motd", "`>`: redirections"),
    ("cat a >> b", "`>>`: redirections"),
    ("ls 2>/dev/null", "`>`: redirections"),
    ("ls 2>&1", "redirections"),
    ("ls &> out", "redirections"),
    ("cat < /etc/passwd", "`<`: redirections"),
    ("grep x <<EOF", "redirections"),
    ("cat <(ls)", "redirections"),
    ("echo $(whoami)", "`$(`: command substitution"),
    ("echo `id`", "backticks"),
    ("ls $HOME", "`$HOME`: variable"),
    ("ls ${PATH}", "variable"),
    ("rm -rf /", "`rm`: `rm` deletes files"),
    ("rm /tmp/x", "deletes files"),
    ("find / -name core -delete", "`find -delete`"),
    ("find /tmp -exec rm {} ;", "`find -exec`"),
    ("find /tmp -execdir ls {} +", "`find -execdir`"),
    ("find / -fprint /tmp/list", "`find -fprint`"),
    ("find / -ok rm {} ;", "`find -ok`"),
    ("sed -i s/a/b/ /etc/hosts", "`sed`: `sed` is a scripting language"),
    ("sed -n 1p file", "scripting language"),
    ("awk '{print > \"/tmp/x\"}' f", "`awk`"),
    ("ls | tee /tmp/out", "`tee`: `tee` writes"),
    ("bash -c 'rm -rf /'", "`bash`: `bash` starts a shell"),
    ("sh -c ls", "starts a shell"),
    ("env X=1 ls", "`env`: `env` runs another program"),
    ("X=1 ls", "`X=1`: environment assignments"),
    ("LD_PRELOAD=/tmp/evil.so cat /etc/hosts", "environment assignments"),
    ("sudo cat /etc/shadow", "`sudo`: `sudo` runs as another user"),
    ("su - root", "runs as another user"),
    ("ls\nrm -rf /", "newlines"),
    ("ls\r", "carriage returns"),
    ("ls && rm -rf /", "`rm`"),
    ("ls; reboot", "`reboot`"),
    ("df || shutdown -h now", "`shutdown`"),
    ("ls &", "`&`: background jobs"),
    ("(ls)", "`(`: subshells"),
    ("ls |& grep x", "`|&`"),
    ("ls | sh", "`sh`"),
    ("ps aux | xargs kill", "`xargs`"),
    ("kill -9 1", "`kill`: `kill` signals"),
    ("chmod 777 /etc", "changes permissions"),
    ("dd if=/dev/zero of=/dev/sda", "`dd`"),
    ("mv a b", "`mv`"),
    ("cp /etc/hosts /tmp/h", "`cp`"),
    ("truncate -s0 /var/log/syslog", "`truncate`"),
    ("curl -X POST http://x", "`curl`"),
    ("python3 -c 'import os'", "`python3`"),
    ("/bin/rm -rf /", "`/bin/rm`: give the program's name"),
    ("./ls", "give the program's name"),
    ("vim /etc/hosts", "interactive"),
    ("nosuchtool --version", "`nosuchtool` is not on the list"),
    ("tail -f /var/log/syslog", "`tail -f`: following output never ends"),
    ("tail --follow=name x", "`tail --follow`"),
    ("journalctl -f", "`journalctl -f`"),
    ("journalctl --vacuum-time=1d", "`journalctl --vacuum-time`"),
    ("journalctl --rot", "`journalctl --rot`"),
    ("dmesg -c", "`dmesg -c`: this option clears"),
    ("dmesg -Tc", "`dmesg -c`"),
    ("dmesg --clear", "`dmesg --clear`"),
    ("systemctl restart nginx", "`systemctl restart`: only read verbs"),
    ("systemctl stop postgresql", "`systemctl stop`"),
    ("systemctl -H other status", "`systemctl -H`"),
    ("ip link set eth0 down", "`ip link set`: only read verbs"),
    ("ip addr flush dev eth0", "`ip addr flush`"),
    ("ip -batch cmds", "`ip -batch`"),
    ("ip netns exec x ls", "`ip netns`"),
    ("ss -K dst 10.0.0.1", "`ss -K`"),
    ("sort -o /etc/passwd x", "`sort -o`"),
    ("sort --output=/tmp/x f", "`sort --output`"),
    ("uniq in.txt out.txt", "output file uniq would overwrite"),
    ("date -s '2020-01-01'", "`date -s`"),
    ("date 010100002020", "`date 010100002020`: a bare date argument sets the clock"),
    ("hostname evil", "`hostname evil`"),
    ("crontab -r", "only listing"),
    ("sysctl -w vm.swappiness=0", "`sysctl -w`"),
    ("sysctl vm.swappiness=0", "`sysctl vm.swappiness=0`"),
    ("vmstat 1", "a delay without a count never ends"),
    ("top", "only batch mode"),
    ("free -s 1", "`free -s`"),
    ("ps auxe", "`ps auxe`: the BSD `e` option"),
    ("cat /proc/1/environ", "process environments hold secrets"),
    ("cat /etc/shadow", "password hashes"),
    ("cat /root/.ssh/id_ed25519", "private SSH keys"),
    ("grep -r password /etc", "secret store"),
    ("openssl genrsa 2048", "`openssl genrsa`"),
    ("openssl x509 -in c.pem -out /tmp/x", "`openssl -out`"),
    ("file -C -m magic", "`file -C`"),
    ("ls 'unterminated", "cannot parse"),
    ("", "empty"),
    ("   ", "empty"),
    ("| ls", "a pipe needs a command"),
    ("ls |", "ends without a command"),
    ("ls && && ls", "needs a command before it"),
    ("ls " + "a" * 2100, "limited to 2000 characters"),
    ("ls | ls | ls | ls | ls | ls | ls | ls | ls", "at most 8 commands"),
    ("service nginx restart", "`service`"),
    ("docker rm -f web", "`docker`"),
    ("watch df", "`watch`"),
    ("timeout 5 rm x", "`timeout`"),
    ("nice rm x", "`nice`"),
    (". /tmp/evil", "`.`"),
    ("exec rm x", "`exec`"),
    ("grep -r DATABASE_URL /proc", "`grep -r /proc`: a recursive search of /proc"),
    ("grep -rai key /", "`grep -r /`"),
    ("grep -r x /var/../proc/1", "a recursive search of /proc/1 would read /proc"),
    ("grep -R x /var/log", "`grep -R`: -R follows symbolic links"),
    ("grep --recursive x", "name the directories"),
    ("zgrep -d recurse x /", "`zgrep -r /`"),
]


def test_the_table_is_big_enough():
    assert len(ALLOWED) + len(REFUSED) >= 60
    assert len(REFUSED) >= 40


@pytest.mark.parametrize("line,expected", ALLOWED, ids=[a for a, _ in ALLOWED])
def test_allowed(line, expected):
    script = check(line)
    if expected is not None:
        assert [list(argv) for pipeline in script.pipelines for argv in pipeline] == expected
    for pipeline in script.pipelines:
        for argv in pipeline:
            assert argv[0] in PROGRAMS


@pytest.mark.parametrize("line,fragment", REFUSED, ids=[r[:40] for r, _ in REFUSED])
def test_refused_names_the_part_and_why(line, fragment):
    with pytest.raises(PolicyRefusal) as refusal:
        check(line)
    assert fragment in str(refusal.value)
    assert refusal.value.reason  # always says why


def test_chain_structure_is_what_runs():
    script = check("ls /nope || echo fallback && df -h")
    assert script.operators == ("||", "&&")
    assert script.render() == "ls /nope || echo fallback && df -h"


def test_quoted_words_stay_words_when_rendered_for_ssh():
    script = check("grep -E 'a;b|c && d' /var/log/app.log")
    assert script.pipelines == ((("grep", "-E", "a;b|c && d", "/var/log/app.log"),),)
    assert script.render() == "grep -E 'a;b|c && d' /var/log/app.log"


# --- property: no generated command carrying a write primitive is ever allowed ---------------------

SAFE_COMMANDS = [
    "ls -la /var/log",
    "df -h",
    "ps aux",
    "cat /etc/hosts",
    "grep -i error app.log",
    "uptime",
    "journalctl -n 20",
    "du -sh /var",
    "ss -tln",
    "free -m",
    "wc -l x",
    "sort -rn",
    "head -n 5",
]
WRITE_PRIMITIVES = [
    "> /tmp/out",
    ">> /tmp/out",
    "2> /tmp/err",
    "&> /tmp/all",
    "< /etc/passwd",
    "| tee /tmp/x",
    "; rm -rf /",
    "&& rm -f x",
    "|| rm x",
    "$(rm -rf /)",
    "`rm x`",
    "; find / -delete",
    "; find / -exec rm {} +",
    "; sed -i s/a/b/ f",
    "| sh",
    "| bash",
    "; bash -c 'rm x'",
    "; sudo reboot",
    "; env X=1 rm x",
    "&& truncate -s0 f",
    "; dd of=/dev/sda",
    "; mv a b",
    "; cp a b",
    "; chmod 000 /",
    "&",
    "\n rm x",
    "; X=1 ls",
    "; systemctl stop nginx",
    "; ip link set eth0 down",
    "; sort -o /etc/passwd x",
    "; journalctl --vacuum-size=1",
    "; dmesg -C",
    "; kill 1",
    "| xargs rm",
    "; crontab -r",
]
FILLER_WORDS = st.sampled_from(["-n", "5", "/var/log", "'quoted word'", "x", "--", "-la", "a|b"])


@st.composite
def commands_with_a_write_primitive(draw) -> str:
    stages = draw(st.lists(st.sampled_from(SAFE_COMMANDS), min_size=1, max_size=3))
    words = [" ".join([stage, *draw(st.lists(FILLER_WORDS, max_size=2))]) for stage in stages]
    line = " | ".join(words)
    primitive = draw(st.sampled_from(WRITE_PRIMITIVES))
    position = draw(st.sampled_from(["end", "start", "middle"]))
    if position == "start" and primitive.startswith(("; ", "&& ", "|| ", "| ")):
        return primitive.split(" ", 1)[1] + " ; " + line
    if position == "middle" and len(words) > 1:
        return words[0] + " " + primitive + " | " + " | ".join(words[1:])
    return line + " " + primitive


@settings(max_examples=400, deadline=None)
@given(commands_with_a_write_primitive())
def test_no_generated_command_with_a_write_primitive_is_allowed(line):
    with pytest.raises(PolicyRefusal):
        check(line)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ls -|;&<>()$`'\"\\\nrm*/a")), max_size=40))
def test_whatever_passes_runs_only_allowlisted_programs(line):
    try:
        script = check(line)
    except PolicyRefusal:
        return
    for pipeline in script.pipelines:
        for argv in pipeline:
            assert argv[0] in PROGRAMS
            assert not any(set(word) <= set("();<>|&") and word for word in argv[:1])


def test_protected_folders_are_off_limits_on_the_local_device():
    protected = ["/srv/ongrid/var"]
    for line, fragment in [
        ("cat /srv/ongrid/var/ongrid.sqlite3", "`/srv/ongrid/var/ongrid.sqlite3`: /srv/ongrid/var is off limits"),
        ("head -c 100 srv/ongrid/var/admin-token", "data folder"),
        ("ls /srv/ongrid/./var", "data folder"),
        ("grep -r BEGIN /srv", "`grep /srv`: the recursive read would cover /srv/ongrid/var"),
        ("grep --file=/srv/ongrid/var/x y /etc", "data folder"),
    ]:
        with pytest.raises(PolicyRefusal) as refusal:
            check(line, protected=protected)
        assert fragment in str(refusal.value)
    assert check("ls /srv/ongrid", protected=protected)  # the folder's parent itself is fine to list
    assert check("grep -r error /var/log", protected=protected)
