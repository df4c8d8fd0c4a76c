"""Vault sync from Git against real servers: `git http-backend` behind a token-checking HTTP server
and the test sshd with a deploy key, serving a bare repository of runbooks made in tmp.

What a user notices: the runbooks become searchable, a change is re-indexed, a file deleted
upstream disappears, uploads stay, a bad token or a refused address is a clear error that never
shows the token, one sync at a time, and nothing crosses organizations."""

from __future__ import annotations

import dataclasses
import logging
import socket
import subprocess
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from ongrid_site.celery import app as celery_app
from ops_app.knowledge import git_sync, retrieval, vault
from ops_app.models import KnowledgeDocument, VaultRepository
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.git_server import Runbooks, git_http_server
from tests.support.sshd import sshd  # noqa: F401 - fixture

TOKEN = "glpat-SECRET-token-7c1d"  # noqa: S105 - a test token
DISK_FULL = """# Disk full on /var

## Symptoms

Writes fail with "No space left on device"; journald fills /var/log.

## Fix

Vacuum the journal: `journalctl --vacuum-size=500M`, then find large files with `du -xh /var`.
"""
CERTIFICATE = """---
title: Renew an expiring TLS certificate
---

Run certbot renew and reload nginx when the x509 certificate expires.
"""


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, data_dir=tmp_path / "data")
    return tmp_path / "data"


@pytest.fixture
def runbooks(tmp_path) -> Runbooks:
    books = Runbooks(tmp_path / "served").create()
    books.write("runbooks/disk-full.md", DISK_FULL)
    books.write("runbooks/tls/certificate.markdown", CERTIFICATE)
    books.write("runbooks/notes.txt", "not Markdown: journald vacuum\n")
    books.write("README.md", "# Outside the path\n\nzebra giraffe\n")
    books.symlink("runbooks/passwd.md", "/etc/passwd")
    books.write(
        "runbooks/big.md", "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a\nsize 12345\n"
    )
    books.commit("first runbooks")
    return books


@pytest.fixture
def server(runbooks):
    with git_http_server(runbooks, TOKEN) as running:
        yield running


def http_repository(org, url: str, token: str = TOKEN, **fields) -> VaultRepository:
    fields = {"name": "ops", "url": url, "branch": "main", "path": "runbooks", **fields}
    return VaultRepository.objects.create(
        organization=org, auth=VaultRepository.Auth.TOKEN, token=token, **fields
    )


def repository_sources(repo: VaultRepository) -> list[str]:
    """The documents' sources: the repository's name, then the file's path inside it."""
    return sorted(KnowledgeDocument.objects.filter(repository=repo).values_list("source", flat=True))


def top_titles(org, question: str) -> list[str]:
    return [hit.title for hit in retrieval.search(org.pk, question, top_k=3).hits]


# --- over HTTP with a token ------------------------------------------------------------------------


def test_a_token_repository_is_synced_and_its_runbooks_answer_questions(org, runbooks, server, fake_dns):
    # A name the system resolver does not know: git reaches the server only through the pinned address.
    fake_dns["git.runbooks.test"] = ["127.0.0.1"]
    repo = http_repository(org, server.url("git.runbooks.test"))

    report = git_sync.sync_repository(repo)

    repo.refresh_from_db()
    assert report["status"] == "ok", report
    assert repo.last_error == "" and repo.last_commit == report["commit"] and len(repo.last_commit) == 40
    assert repo.last_synced_at is not None and repo.sync_claimed_until is None
    assert repository_sources(repo) == ["ops/runbooks/disk-full.md", "ops/runbooks/tls/certificate.markdown"]
    assert repo.last_report["indexed_count"] == 2
    skipped = repo.last_report["skipped"]
    assert any("passwd.md" in line for line in skipped)  # a symlink is never read
    assert any("big.md" in line and "LFS" in line for line in skipped)
    document = KnowledgeDocument.objects.get(repository=repo, source="ops/runbooks/disk-full.md")
    assert document.source_kind == KnowledgeDocument.Source.REPOSITORY and document.is_indexed
    assert top_titles(org, "No space left on device, journald fills /var")[0] == "Disk full on /var"
    assert top_titles(org, "x509 certificate expires")[0] == "Renew an expiring TLS certificate"
    assert top_titles(org, "zebra giraffe") == []  # README.md is outside the path
    assert set(server.hosts) == {f"git.runbooks.test:{server.port}"}
    assert server.statuses and set(server.statuses) == {200}


def test_the_token_never_reaches_argv_or_the_local_repository(org, server, data_dir, monkeypatch):
    argvs: list[list[str]] = []

    class Recording(subprocess.Popen):
        def __init__(self, argv, *args, **kwargs):
            argvs.append(list(argv))
            super().__init__(argv, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Recording)
    repo = http_repository(org, server.url())

    assert git_sync.sync_repository(repo)["status"] == "ok"

    assert argvs and all(TOKEN not in " ".join(argv) for argv in argvs)
    assert server.expected in server.authorizations  # it travelled as the Authorization header
    stored = git_sync.repository_dir(repo)
    for path in stored.rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path


def test_a_change_is_reindexed_a_deleted_file_removed_and_uploads_kept(org, runbooks, server):
    upload, _ = vault.save_document(org, kind="upload", source="disk-full.md", title="My notes", content="x")
    vault.ingest(org, kind="vault", source="oom.md", title="OOM", content="the OOM killer")
    repo = http_repository(org, server.url())
    git_sync.sync_repository(repo)

    runbooks.write("runbooks/disk-full.md", DISK_FULL.replace("journalctl", "logrotate --force"))
    runbooks.delete("runbooks/tls/certificate.markdown")
    runbooks.commit("rotate instead; the certificate runbook moved away")
    report = git_sync.sync_repository(repo)

    assert report["status"] == "ok", report
    assert report["indexed"] == ["runbooks/disk-full.md"] and report["removed"] == [
        "runbooks/tls/certificate.markdown"
    ]
    assert repository_sources(repo) == ["ops/runbooks/disk-full.md"]
    assert "logrotate" in KnowledgeDocument.objects.get(repository=repo).content
    assert "Renew an expiring TLS certificate" not in top_titles(org, "x509 certificate expires")
    assert KnowledgeDocument.objects.filter(pk=upload.pk).exists()
    assert KnowledgeDocument.objects.filter(organization=org, source_kind="vault", source="oom.md").exists()

    again = git_sync.sync_repository(repo)
    assert again["unchanged"] == ["runbooks/disk-full.md"] and again["indexed"] == []


def test_a_bad_token_is_an_error_without_the_token_and_keeps_the_documents(org, server, caplog):
    repo = http_repository(org, server.url())
    git_sync.sync_repository(repo)
    wrong = "ghp_WRONG-token-0000"  # noqa: S105
    repo.token = wrong
    repo.save()

    with caplog.at_level(logging.DEBUG):
        report = git_sync.sync_repository(repo)

    repo.refresh_from_db()
    assert report["status"] == "error"
    assert "authentication failed" in repo.last_error and "exit status" in repo.last_error
    assert wrong not in repo.last_error and wrong not in caplog.text and TOKEN not in caplog.text
    assert "token required" not in repo.last_error  # the server's words are never echoed
    assert len(repository_sources(repo)) == 2


def test_a_path_without_markdown_is_an_error_that_keeps_the_documents(org, runbooks, server):
    repo = http_repository(org, server.url())
    first = git_sync.sync_repository(repo)["commit"]
    runbooks.write("elsewhere/new.md", "# New\n")
    runbooks.commit("more")
    repo.path = "no-such-folder"
    repo.save()

    report = git_sync.sync_repository(repo)

    repo.refresh_from_db()
    assert report["status"] == "error" and "no Markdown files" in report["error"]
    assert repo.last_error == report["error"] and repo.last_commit == first  # what the documents reflect
    assert len(repository_sources(repo)) == 2


def test_a_missing_branch_is_named(org, server):
    repo = http_repository(org, server.url(), branch="release")
    report = git_sync.sync_repository(repo)
    assert report["status"] == "error" and "branch does not exist" in report["error"]


def test_a_server_that_never_answers_is_a_timeout(org, monkeypatch):
    monkeypatch.setattr(git_sync, "GIT_TIMEOUT", 2)
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        repo = http_repository(org, f"http://127.0.0.1:{silent.getsockname()[1]}/runbooks.git")
        report = git_sync.sync_repository(repo)
    assert report["status"] == "error" and "timed out after 2 s" in report["error"]


def test_deleting_the_repository_removes_its_documents_and_local_copy(org, server):
    repo = http_repository(org, server.url())
    git_sync.sync_repository(repo)
    local = git_sync.repository_dir(repo)
    assert (local / "HEAD").exists()

    repo.delete()

    assert not KnowledgeDocument.objects.filter(source_kind="repository").exists() and not local.exists()


# --- the egress policy and the URLs refused -------------------------------------------------------


def test_a_loopback_repository_is_refused_when_the_policy_forbids_it(org, server, egress_enforced):  # noqa: F811
    repo = http_repository(org, server.url())

    report = git_sync.sync_repository(repo)

    assert (
        report["status"] == "error" and "egress policy" in report["error"] and "loopback" in report["error"]
    )
    assert server.hosts == []  # git never connected
    assert git_sync.url_refusal(server.url()) is not None


def test_a_name_resolving_to_loopback_is_refused_at_sync_time(org, server, egress_enforced, fake_dns):  # noqa: F811
    fake_dns["git.example.com"] = ["93.184.216.34"]
    repo = http_repository(org, f"http://git.example.com:{server.port}/runbooks.git")
    assert git_sync.url_refusal(repo.url) is None  # acceptable when saved
    fake_dns["git.example.com"] = ["127.0.0.1"]  # ...and rebinds to loopback before the sync

    report = git_sync.sync_repository(repo)

    assert "egress policy" in report["error"] and server.hosts == []


@pytest.mark.parametrize(
    "url",
    [
        "file:///srv/git/runbooks.git",
        "git://git.example.com/runbooks.git",
        "ext::sh -c touch% /tmp/pwned",
        "/srv/git/runbooks.git",
        "../runbooks.git",
        "https://user:password@git.example.com/runbooks.git",
        "https://ghp_token@git.example.com/runbooks.git",
        "ssh://git:password@git.example.com/runbooks.git",
        "--upload-pack=touch /tmp/pwned",
        "https://git.example.com/runbooks.git?x=1",
    ],
)
def test_refused_urls_are_refused_when_saved_and_never_run(org, url, monkeypatch):
    ran: list = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: ran.append(a))
    assert git_sync.url_refusal(url)
    repo = http_repository(org, url)
    report = git_sync.sync_repository(repo)
    assert report["status"] == "error" and ran == []


def test_scp_like_and_ssh_urls_are_understood():
    remote = git_sync.parse_remote("git@github.com:ops/runbooks.git")
    assert (remote.scheme, remote.user, remote.host, remote.port) == ("ssh", "git", "github.com", 22)
    assert (
        git_sync.browse_url(remote, "main", "a b.md") == "https://github.com/ops/runbooks/blob/main/a%20b.md"
    )
    gitlab = git_sync.parse_remote("https://gitlab.example.com/group/runbooks.git")
    assert (
        git_sync.browse_url(gitlab, "main", "x.md")
        == "https://gitlab.example.com/group/runbooks/-/blob/main/x.md"
    )
    assert git_sync.browse_url(git_sync.parse_remote("ssh://git@10.0.0.5:2222/r.git"), "main", "x.md") == ""


# --- one at a time, on a schedule ------------------------------------------------------------------


def test_a_claimed_repository_is_not_synced_twice(org, server):
    repo = http_repository(org, server.url())
    assert git_sync.claim(repo)  # another process holds it

    assert git_sync.sync_repository(repo) == {"status": "busy"}
    assert server.hosts == [] and repository_sources(repo) == []

    VaultRepository.objects.filter(pk=repo.pk).update(
        sync_claimed_until=timezone.now() - timedelta(seconds=1)
    )
    assert git_sync.sync_repository(repo)["status"] == "ok"  # an abandoned claim is taken over


def test_the_schedule_syncs_due_repositories_only(org, server):
    due = http_repository(org, server.url())
    on_demand = http_repository(org, server.url(), name="manual", interval_minutes=0)
    disabled = http_repository(org, server.url(), name="off", enabled=False)

    assert git_sync.sync_due() == 1
    assert git_sync.sync_due() == 0  # synced a moment ago; next in 15 minutes

    assert repository_sources(due) and not repository_sources(on_demand) and not repository_sources(disabled)
    VaultRepository.objects.filter(pk=due.pk).update(last_synced_at=timezone.now() - timedelta(minutes=16))
    assert [repo.pk for repo in git_sync.due()] == [due.pk]


def test_the_management_command_syncs_now(org, server, capsys):
    repo = http_repository(org, server.url(), interval_minutes=0)
    call_command("ongrid_sync_vault_repos")
    assert "2 indexed" in capsys.readouterr().out
    assert len(repository_sources(repo)) == 2


# --- over SSH with a deploy key --------------------------------------------------------------------


def ssh_repository(org, sshd, runbooks, **fields) -> VaultRepository:  # noqa: F811
    url = f"ssh://{sshd.username}@127.0.0.1:{sshd.port}{runbooks.bare}"
    values = {"ssh_private_key": sshd.private_key, "ssh_known_hosts": sshd.known_hosts, **fields}
    return VaultRepository.objects.create(
        organization=org,
        name="over-ssh",
        url=url,
        path="runbooks",
        auth=VaultRepository.Auth.SSH_KEY,
        **values,
    )


def test_a_deploy_key_repository_is_synced_over_ssh(org, sshd, runbooks, tmp_path):  # noqa: F811
    repo = ssh_repository(org, sshd, runbooks)

    report = git_sync.sync_repository(repo)

    assert report["status"] == "ok", report
    assert len(repository_sources(repo)) == 2
    assert top_titles(org, "No space left on device")[0] == "Disk full on /var"
    assert not list(tmp_path.glob("ongrid-git-*"))  # the key's temporary directory is gone


def test_an_unknown_host_key_is_refused_over_ssh(org, sshd, runbooks, tmp_path):  # noqa: F811
    other = tmp_path / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    wrong = f"[127.0.0.1]:{sshd.port} " + " ".join(other.with_suffix(".pub").read_text().split()[:2])
    repo = ssh_repository(org, sshd, runbooks, ssh_known_hosts=wrong)

    report = git_sync.sync_repository(repo)

    assert report["status"] == "error" and "host key" in report["error"]
    assert repository_sources(repo) == []


# --- tenancy and the admin -------------------------------------------------------------------------


def test_another_organization_never_sees_the_repository_or_its_documents(org, other_org, server, client):
    repo = http_repository(org, server.url())
    git_sync.sync_repository(repo)

    assert retrieval.search(other_org.pk, "No space left on device").hits == []
    client.force_login(create_user("olga", "olga-pass-123", other_org, roles.ORG_ADMIN))
    listing = client.get(reverse("admin:ops_app_vaultrepository_changelist"))
    assert listing.status_code == 200 and b"runbooks.git" not in listing.content
    change = client.get(reverse("admin:ops_app_vaultrepository_change", args=[repo.pk]))
    assert change.status_code == 302  # Django's admin: "does not exist", back to the index


def test_the_admin_lists_repositories_never_renders_the_token_and_syncs_now(
    org, server, client, org_admin, monkeypatch, django_assert_max_num_queries
):
    monkeypatch.setitem(celery_app.conf, "task_always_eager", True)  # "Sync now" answers in the page
    repo = http_repository(org, server.url())
    http_repository(org, server.url(), name="second")
    client.force_login(org_admin)

    change = client.get(reverse("admin:ops_app_vaultrepository_change", args=[repo.pk]))
    assert change.status_code == 200 and TOKEN not in change.content.decode()
    assert "Sync now" in change.content.decode()
    synced = client.post(reverse("admin:ops_app_vaultrepository_test", args=[repo.pk]), follow=True)
    assert "2 indexed" in synced.content.decode() and TOKEN not in synced.content.decode()

    with django_assert_max_num_queries(12):
        listing = client.get(reverse("admin:ops_app_vaultrepository_changelist"))
    page = listing.content.decode()
    repo.refresh_from_db()
    assert listing.status_code == 200 and repo.last_commit[:12] in page and "second" in page
    assert TOKEN not in page


def test_the_admin_form_refuses_bad_urls_and_missing_keys(org, client, org_admin):
    client.force_login(org_admin)
    add = reverse("admin:ops_app_vaultrepository_add")
    base = {"name": "r", "branch": "main", "path": "", "interval_minutes": 15, "enabled": "on"}

    local = client.post(add, {**base, "url": "file:///srv/runbooks.git", "auth": "none"})
    assert "only https, http and ssh" in local.content.decode()
    keyless = client.post(add, {**base, "url": "git@github.com:ops/runbooks.git", "auth": "none"})
    assert "needs an SSH deploy key" in keyless.content.decode()
    tokenless = client.post(add, {**base, "url": "https://github.com/ops/runbooks.git", "auth": "token"})
    assert "Paste the access token" in tokenless.content.decode()
    assert not VaultRepository.objects.exists()

    saved = client.post(
        add, {**base, "url": "https://github.com/ops/runbooks.git", "auth": "token", "token": TOKEN}
    )
    assert saved.status_code == 302, saved.context["adminform"].form.errors
    assert VaultRepository.objects.get(organization=org).token == TOKEN
