"""On the Ongrid host (the local transport) every path is resolved on the machine, symbolic links
included, and refused inside Ongrid's own folders, /proc and /sys; a recursive read may not
cover them nor follow links. Rows name the folders of a real tree built for each test."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.shell_policy import assert_allowed, assert_refused, ids

OFF_LIMITS = "{data} is off limits on the Ongrid host"
COVERS = "the recursive read would cover {data}, which is off limits on the Ongrid host"
NO_LINKS = "on the Ongrid host a recursive read may not follow symbolic links"

ALLOWED = [
    ("ls {site}", None),
    ("ls {other}", None),
    ("ls -L {other}", None),
    ("cat {other}/notes.txt", None),
    ("grep -r x {other}", None),
    ("du -sh {other}", None),
    ("find {other} -name x", None),
    ("ls /", None),
    ("grep -r error /etc/nginx", None),
    ("wc -l /etc/hosts", None),
    ("uptime", None),
]

REFUSED = [
    # the protected folder, however the path reaches it
    ("cat {data}/db.sqlite3", "refused `{data}/db.sqlite3`: " + OFF_LIMITS),
    ("ls {data}", OFF_LIMITS),
    ("ls {data}/", OFF_LIMITS),
    ("cat {data}/../data/db.sqlite3", OFF_LIMITS),
    ("cat {site}//data/db.sqlite3", OFF_LIMITS),
    ("cat {site}/./data/db.sqlite3", OFF_LIMITS),
    ("head -c 100 {relative}/db.sqlite3", OFF_LIMITS),
    ("cat {link}/db.sqlite3", "refused `{link}/db.sqlite3`: " + OFF_LIMITS),
    ("ls {link}", OFF_LIMITS),
    ("grep -r x {link}", OFF_LIMITS),
    # in option values and in words no program reads as a file
    ("grep --file={data}/x y /etc", "refused `{data}/x`: " + OFF_LIMITS),
    ("grep -f{data}/x y /etc", OFF_LIMITS),
    ("stat --printf=%s {data}/db.sqlite3", OFF_LIMITS),
    ("echo {data}/x", OFF_LIMITS),
    ("grep {data} /etc/hosts", OFF_LIMITS),
    # /proc and /sys, even the files that are fine on other hosts
    ("cat /proc/loadavg", "/proc is off limits on the Ongrid host"),
    ("cat /proc/self/status", "/proc is off limits"),
    ("ls /sys", "/sys is off limits"),
    # recursive reads rooted above the protected folder
    ("grep -r x {site}", "refused `grep {site}`: " + COVERS),
    ("du -sh {site}", "refused `du {site}`: " + COVERS),
    ("find {site} -name x", "refused `find {site}`: " + COVERS),
    ("ls -R {site}", "refused `ls {site}`: " + COVERS),
    ("du -sh /", "refused `du /`: " + COVERS),
    ("find / -name x", "refused `find /`: " + COVERS),
    # recursive reads that follow symbolic links
    ("du -L -sh {other}", "refused `du {other}`: " + NO_LINKS),
    ("find -L {other} -name x", "refused `find {other}`: " + NO_LINKS),
    ("find {other} -follow", NO_LINKS),
    ("ls -RL {other}", NO_LINKS),
]


@pytest.fixture
def host(tmp_path: Path) -> dict[str, str]:
    """A site folder holding Ongrid's data folder (protected), a neighbour, and a link into data."""
    site = tmp_path / "site"
    (site / "data").mkdir(parents=True)
    (site / "data" / "db.sqlite3").write_text("")
    (site / "other").mkdir()
    (site / "other" / "notes.txt").write_text("notes")
    (site / "other" / "link").symlink_to(site / "data")
    data = str(site / "data")
    return {
        "site": str(site),
        "data": data,
        "other": str(site / "other"),
        "link": str(site / "other" / "link"),
        "relative": data.lstrip("/"),
    }


def protected(host: dict[str, str]) -> list[str]:
    return [host["data"], "/proc", "/sys"]


@pytest.mark.parametrize("line,argv", ALLOWED, ids=ids(ALLOWED))
def test_allowed_on_the_ongrid_host(host, line, argv):
    assert_allowed(line.format(**host), argv, protected=protected(host))


@pytest.mark.parametrize("line,fragment", REFUSED, ids=ids(REFUSED))
def test_refused_on_the_ongrid_host(host, line, fragment):
    assert_refused(line.format(**host), fragment.format(**host), protected=protected(host))


ONLY_ON_THE_ONGRID_HOST = [
    "cat /proc/loadavg",
    "ls /sys",
    "cat {data}/db.sqlite3",
    "cat {link}/db.sqlite3",
    "du -sh {site}",
    "du -L -sh {other}",
    "echo {data}/x",
]


@pytest.mark.parametrize("line", ONLY_ON_THE_ONGRID_HOST)
def test_other_hosts_are_not_bound_by_the_ongrid_hosts_folders(host, line):
    """Without protected folders (the SSH transport) these lines only face the common rules."""
    assert_allowed(line.format(**host), None)
