"""Fetching packs from real sources: a Git repository served by `git http-backend` over loopback,
and a catalog index with its archives on a loopback HTTP server.

What an admin notices: the pack's files arrive from the branch, tag and folder asked for, and
every refusal (a missing ref, a symlink, a file too big, a server error, a redirect, an index too
large, a wrong checksum, the egress policy) is a clear message that never repeats what the remote
server said, with nothing left behind in the data directory."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import tarfile
from collections.abc import Iterator

import pytest

from agents_app.packs import archive, sources
from agents_app.packs.contents import PackError
from tests.support.egress import egress_enforced  # noqa: F401 - fixture
from tests.support.git_server import Runbooks, git_http_server
from tests.support.httpd import Site, loopback_site

TOKEN = "ghp_PACK-token-91aa"  # noqa: S105 - a test token
MARKER = "server-said-3f9c: stack trace at /srv/catalog"  # what a failing server answers


def manifest(name: str, version: str) -> str:
    return f"name: {name}\nversion: {version}\ndescription: Disk tools\nauthor: Ops\nfiles: {{}}\n"


AGENT = "---\nname: disk-doctor\ndescription: Finds what fills a disk\n---\nYou look at disks.\n"
SKILL = "---\nname: du-sort\ndescription: Largest directories first\n---\nRun du -xh | sort -h.\n"


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, data_dir=tmp_path / "data")
    return tmp_path / "data"


def left_behind(data_dir) -> list:
    """What a fetch left in the data directory's scratch area (it must leave nothing)."""
    scratch = data_dir / sources.FETCH_DIR
    return list(scratch.iterdir()) if scratch.exists() else []


# --- Git ------------------------------------------------------------------------------------------


@pytest.fixture
def repository(tmp_path) -> Runbooks:
    """Two packs in one repository: disk-tools 1.0.0 tagged v1.0.0 (annotated, as releases are)
    and stable-1 (lightweight), then 1.1.0 on main."""
    repo = Runbooks(tmp_path / "served", name="packs").create()
    repo.write("README.md", "# Our packs\n")
    write_pack(repo, "packs/disk-tools", "disk-tools", "1.0.0")
    write_pack(repo, "packs/net-tools", "net-tools", "0.3.0")
    repo.commit("disk-tools 1.0.0")
    repo.tag("v1.0.0", message="disk-tools 1.0.0")
    repo.tag("stable-1")
    write_pack(repo, "packs/disk-tools", "disk-tools", "1.1.0")
    repo.commit("disk-tools 1.1.0")
    return repo


def write_pack(repo: Runbooks, folder: str, name: str, version: str) -> None:
    repo.write(f"{folder}/pack.yaml", manifest(name, version))
    repo.write(f"{folder}/agents/disk-doctor.md", AGENT)
    repo.write(f"{folder}/skills/du-sort/SKILL.md", SKILL)
    repo.write(f"{folder}/README.md", f"# {name}\n")


@pytest.fixture
def git_server(repository):
    with git_http_server(repository) as running:  # a public repository: no token
        yield running


PACK_FILES = {"pack.yaml", "agents/disk-doctor.md", "skills/du-sort/SKILL.md", "README.md"}


def test_a_pack_is_fetched_from_a_branch_with_its_commit(repository, git_server, data_dir):
    head = repository.commit("nothing new")

    files, commit = sources.fetch_git(git_server.url(), "main", "packs/disk-tools")

    assert set(files) == PACK_FILES  # paths relative to the pack's folder; nothing of net-tools
    assert b"version: 1.1.0" in files["pack.yaml"] and files["agents/disk-doctor.md"] == AGENT.encode()
    assert commit == head
    assert left_behind(data_dir) == []  # the temporary bare repository is gone


@pytest.mark.parametrize("tag", ["v1.0.0", "stable-1"], ids=["annotated", "lightweight"])
def test_a_pack_is_fetched_from_a_tag_as_it_was_when_tagged(repository, git_server, tag):
    files, commit = sources.fetch_git(git_server.url(), tag, "/packs/disk-tools/")

    assert b"version: 1.0.0" in files["pack.yaml"]  # main has 1.1.0 since
    assert (
        commit == repository.commit_of(tag) != repository.commit_of("main")
    )  # the commit, not the tag object


def test_another_branch_and_the_whole_repository(repository, git_server):
    repository.switch("stable")
    write_pack(repository, "packs/disk-tools", "disk-tools", "2.0.0-rc1")
    repository.commit("a release candidate on stable")

    files, _commit = sources.fetch_git(git_server.url(), "stable", "packs/disk-tools")
    whole, _commit = sources.fetch_git(git_server.url(), "main")

    assert b"2.0.0-rc1" in files["pack.yaml"]
    assert {"README.md", "packs/net-tools/pack.yaml", "packs/disk-tools/pack.yaml"} <= set(whole)


def test_a_path_with_nothing_under_it_is_refused(git_server, data_dir):
    with pytest.raises(PackError, match="no files under the path packs/disk"):
        sources.fetch_git(git_server.url(), "main", "packs/disk")  # a prefix of packs/disk-tools only
    assert left_behind(data_dir) == []


def test_a_missing_ref_is_named_and_leaves_nothing(git_server, data_dir):
    with pytest.raises(PackError) as refused:
        sources.fetch_git(git_server.url(), "v9.9.9", "packs/disk-tools")

    assert "no branch or tag has that name" in str(refused.value)
    assert "couldn't find" not in str(refused.value)  # git's own words are not shown
    assert left_behind(data_dir) == []


@pytest.mark.parametrize("ref", ["--upload-pack=touch /tmp/x", "main..other", "refs/../x", ""])
def test_a_ref_that_is_not_a_branch_or_tag_name_is_refused_before_git_runs(git_server, ref):
    with pytest.raises(PackError, match="not a valid branch or tag name"):
        sources.fetch_git(git_server.url(), ref)
    assert git_server.hosts == []


def test_a_symlink_in_the_pack_is_refused_by_name(repository, git_server):
    repository.symlink("packs/disk-tools/agents/passwd.md", "/etc/passwd")
    repository.commit("a symlink")

    with pytest.raises(PackError, match=r"packs/disk-tools/agents/passwd\.md is a symbolic link"):
        sources.fetch_git(git_server.url(), "main", "packs/disk-tools")


def test_a_file_too_big_for_a_pack_is_refused_by_name(repository, git_server):
    repository.write_bytes("packs/disk-tools/data/blob.bin", b"x" * (archive.MAX_PACK_BYTES + 1))
    repository.commit("a big file")

    with pytest.raises(PackError, match=r"larger than 5 MB \(at packs/disk-tools/data/blob\.bin\)"):
        sources.fetch_git(git_server.url(), "main", "packs/disk-tools")


def test_a_private_repository_takes_a_token_that_is_never_shown(repository):
    with git_http_server(repository, TOKEN) as server:
        files, _commit = sources.fetch_git(server.url(), "main", "packs/net-tools", token=TOKEN)
        with pytest.raises(PackError) as refused:
            sources.fetch_git(server.url(), "main", "packs/net-tools", token="ghp_WRONG-0000")  # noqa: S106

    assert b"net-tools" in files["pack.yaml"] and server.expected in server.authorizations
    assert "authentication failed" in str(refused.value) and "WRONG" not in str(refused.value)


def test_the_egress_policy_refuses_a_loopback_repository(git_server, egress_enforced, data_dir):  # noqa: F811
    with pytest.raises(PackError, match="refused by the egress policy.*loopback"):
        sources.fetch_git(git_server.url(), "main", "packs/disk-tools")
    assert git_server.hosts == [] and left_behind(data_dir) == []


# --- a catalog ------------------------------------------------------------------------------------


@pytest.fixture
def site() -> Iterator[Site]:
    with loopback_site() as running:
        yield running


def pack_archive(name: str, version: str) -> bytes:
    """A .tar.gz of a small pack (the way a publisher would make one with tar)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, text in {"pack.yaml": manifest(name, version), "agents/disk-doctor.md": AGENT}.items():
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.fixture
def catalog(site) -> str:
    """A catalog at /catalog/index.json: disk-tools 1.9.0, 1.10.0 and 1.2.0 (relative URLs, one
    without a sha256) and net-tools (an absolute URL); each archive served beside it."""
    entries = []
    for version in ("1.9.0", "1.10.0", "1.2.0"):
        data = pack_archive("disk-tools", version)
        site.put(f"/catalog/archives/disk-tools-{version}.tar.gz", data)
        entry = {"name": "disk-tools", "version": version, "description": "Disk tools", "url": ""}
        entry["url"] = f"archives/disk-tools-{version}.tar.gz"
        if version != "1.2.0":
            entry["sha256"] = hashlib.sha256(data).hexdigest()
        entries.append(entry)
    site.put("/mirror/net-tools.tar.gz", pack_archive("net-tools", "0.3.0"))
    entries.append({"name": "net-tools", "version": "0.3.0", "url": site.url("/mirror/net-tools.tar.gz")})
    site.put("/catalog/index.json", json.dumps({"packs": entries}).encode(), Content_Type="application/json")
    return site.url("/catalog/index.json")


def test_the_catalog_lists_its_packs_with_urls_resolved_against_the_index(catalog, site):
    listed = sources.fetch_catalog(catalog)

    assert [(entry.name, entry.version) for entry in listed] == [
        ("disk-tools", "1.9.0"),
        ("disk-tools", "1.10.0"),
        ("disk-tools", "1.2.0"),
        ("net-tools", "0.3.0"),
    ]
    assert listed[0].url == site.url("/catalog/archives/disk-tools-1.9.0.tar.gz")
    assert listed[0].description == "Disk tools" and len(listed[0].sha256) == 64
    assert listed[3].url == site.url("/mirror/net-tools.tar.gz") and listed[3].sha256 == ""


def test_the_newest_version_is_installed_by_version_number_not_text(catalog, site):
    files, entry = sources.fetch_from_catalog(catalog, "disk-tools")

    assert entry.version == "1.10.0"  # as text, 1.9.0 would sort last
    assert b"version: 1.10.0" in files["pack.yaml"]
    assert site.paths[-1] == "/catalog/archives/disk-tools-1.10.0.tar.gz"  # the relative URL, resolved


def test_an_exact_version_is_installed_and_an_unlisted_one_refused(catalog):
    files, entry = sources.fetch_from_catalog(catalog, "disk-tools", "1.2.0")  # the one without a sha256
    assert entry.version == "1.2.0" and b"version: 1.2.0" in files["pack.yaml"]

    with pytest.raises(
        PackError, match=r"no version 3\.0\.0 of disk-tools \(it lists 1\.9\.0, 1\.10\.0, 1\.2\.0\)"
    ):
        sources.fetch_from_catalog(catalog, "disk-tools", "3.0.0")
    with pytest.raises(PackError, match="lists no pack named cpu-tools"):
        sources.fetch_from_catalog(catalog, "cpu-tools")


def test_an_archive_that_does_not_match_its_sha256_is_refused(catalog, site):
    site.put("/catalog/archives/disk-tools-1.10.0.tar.gz", pack_archive("disk-tools", "6.6.6"))  # replaced

    with pytest.raises(PackError, match=r"disk-tools 1\.10\.0 does not match the catalog's SHA-256"):
        sources.fetch_from_catalog(catalog, "disk-tools")


def test_a_server_error_shows_the_status_and_never_the_body(site):
    site.put("/index.json", MARKER.encode(), status=500)

    with pytest.raises(PackError) as refused:
        sources.fetch_catalog(site.url("/index.json"))

    assert "HTTP 500" in str(refused.value) and MARKER not in str(refused.value)
    assert "server-said" not in str(refused.value)


def test_a_redirected_index_is_refused_and_not_followed(site):
    site.put("/index.json", MARKER.encode(), status=302, Location=site.url("/elsewhere.json"))
    site.put("/elsewhere.json", b'{"packs": []}')

    with pytest.raises(PackError, match=r"redirects elsewhere \(HTTP 302\), which is not followed"):
        sources.fetch_catalog(site.url("/index.json"))
    assert site.paths == ["/index.json"]


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "no-content-length"])
def test_an_oversized_index_is_refused(site, declared):
    body = b'{"packs": [], "padding": "' + b"x" * sources.MAX_INDEX_BYTES + b'"}'
    site.put("/index.json", body, **({} if declared else {"no_length": "1"}))

    with pytest.raises(PackError, match=r"catalog index is larger than 1 MB"):
        sources.fetch_catalog(site.url("/index.json"))


def test_an_oversized_archive_download_is_stopped(site):
    site.put("/big.tar.gz", b"\x1f\x8b" + b"x" * archive.MAX_PACK_BYTES, no_length="1")

    with pytest.raises(PackError, match=r"pack archive is larger than 5 MB"):
        sources.download_archive(site.url("/big.tar.gz"))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "Disk Tools", "version": "1", "url": "a.tgz"}, "entry 2 has no valid name"),
        (
            {"name": "disk-tools", "version": "", "url": "a.tgz"},
            r"entry 2 \(disk-tools\) has no valid version",
        ),
        (
            {"name": "disk-tools", "version": "1", "url": "file:///etc/passwd"},
            r"entry 2 \(disk-tools\) has no valid http",
        ),
        ({"name": "disk-tools", "version": "1", "url": "a.tgz", "sha256": "abc"}, "64 hexadecimal digits"),
        ("disk-tools", "entry 2 is not an object"),
    ],
)
def test_a_bad_catalog_entry_is_refused_by_its_number(site, entry, message):
    good = {"name": "net-tools", "version": "0.3.0", "url": "net.tgz"}
    site.put("/index.json", json.dumps({"packs": [good, entry]}).encode())

    with pytest.raises(PackError, match=message):
        sources.fetch_catalog(site.url("/index.json"))


@pytest.mark.parametrize(
    "body", [b"<html>not json</html>", b'{"items": []}', b"[1, 2]", b"[" * 200_000 + b"]" * 200_000]
)
def test_an_index_that_is_not_a_catalog_is_refused(site, body):
    site.put("/index.json", body)
    with pytest.raises(PackError, match='not JSON|no "packs" list'):
        sources.fetch_catalog(site.url("/index.json"))


def test_the_egress_policy_refuses_a_loopback_catalog_before_any_request(catalog, site, egress_enforced):  # noqa: F811
    with pytest.raises(PackError, match="refused by the egress policy.*loopback"):
        sources.fetch_catalog(catalog)
    with pytest.raises(PackError, match="refused by the egress policy"):
        sources.download_archive(site.url("/mirror/net-tools.tar.gz"))
    assert site.connections == 0 and site.paths == []
