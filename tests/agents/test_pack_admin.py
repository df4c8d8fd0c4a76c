"""Packs through the real admin pages (docs/packs.md): upload, preview, confirm; a pack's page,
its upgrade diff, rollback and uninstall; trusted keys; and who may do what (org admins and
platform staff change packs, members and auditors get 403, other tenants' rows are 404)."""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import json
import shutil
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agents_app.models import Pack, PackRelease, TrustedPackKey, UserAgent
from agents_app.packs import install
from agents_app.packs.archive import read_directory
from agents_app.personas import registry
from agents_app.personas import skills as skill_sources
from ops_app.models import McpServer
from ops_app.tenancy import roles
from ops_app.tenancy.accounts import create_user
from tests.support.git_server import Runbooks, git_http_server
from tests.support.httpd import serving
from tests.support.packs import (
    PERSONA,
    archive_of,
    minisign_keypair,
    sign_with_minisign,
    write_pack,
)

pytestmark = pytest.mark.django_db

INSTALL_URL = reverse("admin:agents_app_pack_install")
LIST_URL = reverse("admin:agents_app_pack_changelist")
KEY_ADD_URL = reverse("admin:agents_app_trustedpackkey_add")

WRITER = """---
name: specialist-fixer
description: Restarts what is stuck.
when_to_use: When a service must be restarted.
tools: [host_restart_service]
permission_mode: mutating-with-confirm
---

You restart services.
"""

COORDINATOR = """---
name: default
description: The pack's own coordinator.
when_to_use: Every chat.
---

You coordinate, the pack's way.
"""

MCP = [
    {
        "name": "grafana-mcp",
        "transport": "streamable_http",
        "url": "http://127.0.0.1:9/mcp",
        "headers": ["Authorization"],
    }
]


@pytest.fixture(autouse=True)
def fresh_registries():
    registry.reset()
    skill_sources.forget()
    yield
    registry.reset()
    skill_sources.forget()


@pytest.fixture
def admin_client(client, org_admin):
    client.force_login(org_admin)
    return client


def signed_archive(tmp_path, keys, folder="pack", **kwargs) -> bytes:
    root = write_pack(tmp_path / folder, **kwargs)
    sign_with_minisign(root, keys)
    return archive_of(root)


def upload(client, data: bytes, **extra):
    archive = SimpleUploadedFile("ops-extras.tar.gz", data, content_type="application/gzip")
    return client.post(INSTALL_URL, {"way": "upload", "upload-archive": archive, **extra})


def preview_url(release: PackRelease) -> str:
    return reverse("admin:agents_app_pack_preview", args=[release.pk])


def pack_url(pack: Pack, view: str = "change") -> str:
    return reverse(f"admin:agents_app_pack_{view}", args=[pack.pk])


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def test_upload_preview_and_confirm_installs_the_pack(admin_client, org, org_admin, tmp_path, keys, trusted):
    assert INSTALL_URL in admin_client.get(LIST_URL).content.decode()
    response = upload(admin_client, signed_archive(tmp_path, keys, mcp_servers=MCP))
    release = PackRelease.objects.get(organization=org, status=PackRelease.Status.STAGED)
    assert response.status_code == 302 and response["Location"] == preview_url(release)
    assert not Pack.objects.exists()  # a preview installs nothing

    page = admin_client.get(preview_url(release)).content.decode()
    assert "specialist-packs" in page and "pack-runbook" in page and "grafana-mcp" in page
    assert f"signed by Pack Author ({keys.key_id})" in page and "installed disabled" in page
    assert 'id="confirm-install"' in page and 'id="refusals"' not in page

    response = admin_client.post(preview_url(release), follow=True)
    pack = Pack.objects.get(organization=org)
    assert response.redirect_chain[-1][0] == pack_url(pack)
    assert "Installed ops-extras 1.0.0" in " ".join(messages_of(response))
    page = response.content.decode()
    assert "specialist-packs" in page and "pack-runbook" in page and 'data-status="installed"' in page
    assert registry.get_registry(org.pk).by_name("specialist-packs").source == "user"
    assert not McpServer.objects.get(organization=org, name="grafana-mcp").enabled
    listing = admin_client.get(LIST_URL).content.decode()
    assert "ops-extras" in listing and "1.0.0" in listing and "Pack Author" in listing


def test_the_preview_flags_writes_and_asks_an_admin_to_confirm_the_coordinator(
    admin_client, org, tmp_path, keys, trusted
):
    upload(admin_client, signed_archive(tmp_path, keys, personas={"fixer": WRITER, "default": COORDINATOR}))
    release = PackRelease.objects.get(organization=org)
    page = admin_client.get(preview_url(release)).content.decode()
    assert "write tools" in page and "host_restart_service" in page
    assert "replaces the coordinator" in page and 'name="confirm_coordinator"' in page

    response = admin_client.post(preview_url(release), follow=True)
    assert "must confirm it explicitly" in " ".join(messages_of(response)) and not Pack.objects.exists()
    admin_client.post(preview_url(release), {"confirm_coordinator": "1"})
    assert registry.get_registry(org.pk).by_name("default").source == "user"


def test_a_conflicting_agent_is_shown_as_a_refusal_and_nothing_can_be_confirmed(
    admin_client, org, tmp_path, keys, trusted
):
    UserAgent.objects.create(
        organization=org, name="specialist-packs", description="Ours", when_to_use="Ours"
    )
    upload(admin_client, signed_archive(tmp_path, keys))
    page = admin_client.get(preview_url(PackRelease.objects.get(organization=org))).content.decode()
    assert 'id="refusals"' in page and "rename or delete it first" in page
    assert 'id="confirm-install"' not in page


def test_a_refused_upload_says_why_on_the_install_page(admin_client, org, tmp_path, keys, trusted):
    stranger = minisign_keypair(tmp_path, "stranger")
    response = upload(admin_client, signed_archive(tmp_path, stranger))
    assert response.status_code == 200 and "signature" in response.content.decode()
    assert not PackRelease.objects.exists()


def test_members_and_auditors_may_not_change_packs(
    client, org, org_admin, member, auditor, tmp_path, keys, trusted
):
    release = install.stage(
        org,
        read_directory(_signed_dir(tmp_path, keys)),
        source_kind="file",
        source_url="x.tar.gz",
        user=org_admin,
    )
    pack = install.install(release, org_admin)
    staged = install.stage(
        org,
        read_directory(_signed_dir(tmp_path, keys, "v2", version="2.0.0")),
        source_kind="file",
        user=org_admin,
    )
    client.force_login(member)
    assert client.get(INSTALL_URL).status_code == 302  # not staff: the admin's login page
    for user in (member, auditor):
        user.is_staff = True
        user.save(update_fields=["is_staff"])
        client.force_login(user)
        assert client.get(INSTALL_URL).status_code == 403
        assert upload(client, b"anything").status_code == 403
        assert client.post(preview_url(staged)).status_code == 403
        for view in ("uninstall", "rollback", "upgrade"):
            assert client.post(pack_url(pack, view)).status_code == 403
    assert client.get(pack_url(pack)).status_code == 200  # the auditor may look
    assert Pack.objects.get(pk=pack.pk).version == "1.0.0" and UserAgent.objects.filter(pack=pack).exists()


def test_another_organizations_packs_releases_and_keys_are_not_found(
    admin_client, org, other_org, tmp_path, keys
):
    their_admin = create_user("olga", "olga-pass-123", other_org, roles.ORG_ADMIN)
    their_key = TrustedPackKey.objects.create(
        organization=other_org, name="Theirs", public_key=keys.public_text, key_id=keys.key_id
    )
    files = read_directory(_signed_dir(tmp_path, keys))
    pack = install.install(install.stage(other_org, files, source_kind="file", user=their_admin), their_admin)
    staged = install.stage(
        other_org,
        read_directory(_signed_dir(tmp_path, keys, "v2", version="2.0.0")),
        source_kind="file",
        user=their_admin,
    )
    for url in (pack_url(pack), pack_url(pack, "uninstall"), pack_url(pack, "rollback"), preview_url(staged)):
        assert admin_client.get(url).status_code == 404, url
    assert admin_client.post(pack_url(pack, "uninstall")).status_code == 404
    key_page = admin_client.get(reverse("admin:agents_app_trustedpackkey_change", args=[their_key.pk]))
    assert key_page.status_code == 302 and key_page["Location"] == reverse("admin:index")  # "does not exist"
    keys_page = admin_client.get(reverse("admin:agents_app_trustedpackkey_changelist")).content.decode()
    assert "Theirs" not in keys_page
    assert "ops-extras" not in admin_client.get(LIST_URL).content.decode()
    for listing in ("useragent", "userskill"):  # nor in the pack filter of the agents and skills
        assert (
            "ops-extras"
            not in admin_client.get(reverse(f"admin:agents_app_{listing}_changelist")).content.decode()
        )
    assert Pack.objects.filter(pk=pack.pk).exists()


def test_a_malformed_trusted_key_is_a_form_error_and_a_good_one_gets_its_key_id(admin_client, org, keys):
    response = admin_client.post(KEY_ADD_URL, {"name": "Broken", "public_key": "RWnot-a-minisign-key"})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["public_key"]
    assert not TrustedPackKey.objects.exists()

    response = admin_client.post(KEY_ADD_URL, {"name": "Pack Author", "public_key": keys.public_text})
    assert response.status_code == 302
    key = TrustedPackKey.objects.get(organization=org)
    assert key.key_id == keys.key_id and key.created_by is not None
    again = admin_client.post(KEY_ADD_URL, {"name": "Twice", "public_key": keys.public_text})
    assert "already trusts this key" in str(again.context["adminform"].form.errors["public_key"])


def test_the_uninstall_confirmation_lists_what_goes(admin_client, org, tmp_path, keys, trusted):
    upload(admin_client, signed_archive(tmp_path, keys, mcp_servers=MCP))
    admin_client.post(preview_url(PackRelease.objects.get(organization=org)))
    pack = Pack.objects.get(organization=org)

    page = admin_client.get(pack_url(pack, "uninstall")).content.decode()
    for kind, name in (
        ("agent", "specialist-packs"),
        ("skill", "pack-runbook"),
        ("mcp_server", "grafana-mcp"),
    ):
        assert f'data-kind="{kind}">' in page and name in page
    response = admin_client.post(pack_url(pack, "uninstall"))
    assert response.status_code == 302 and response["Location"] == LIST_URL
    assert not Pack.objects.exists() and not UserAgent.objects.filter(organization=org).exists()
    assert not McpServer.objects.filter(organization=org).exists()
    assert registry.get_registry(org.pk).by_name("specialist-packs") is None


def test_an_upgrade_shows_the_diff_and_a_rollback_restores_the_old_version(
    admin_client, org, tmp_path, keys, trusted
):
    upload(admin_client, signed_archive(tmp_path, keys, folder="v1"))
    admin_client.post(preview_url(PackRelease.objects.get(organization=org)))
    changed = PERSONA.replace("say which runbook you used", "quote the runbook's title")
    upload(
        admin_client,
        signed_archive(tmp_path, keys, folder="v2", version="1.1.0", personas={"packs": changed}),
    )
    release = PackRelease.objects.get(organization=org, status=PackRelease.Status.STAGED)

    page = admin_client.get(preview_url(release)).content.decode()
    assert "Changes from 1.0.0 to 1.1.0" in page and 'data-status="changed"' in page
    assert "+You answer from the runbooks in the knowledge base and quote the runbook&#x27;s title." in page
    admin_client.post(preview_url(release))
    pack = Pack.objects.get(organization=org)
    assert pack.version == "1.1.0"

    page = admin_client.get(pack_url(pack)).content.decode()
    assert "Roll back to 1.0.0" in page
    assert "Roll back to 1.0.0" in admin_client.get(pack_url(pack, "rollback")).content.decode()
    response = admin_client.post(pack_url(pack, "rollback"), follow=True)
    assert "Rolled back ops-extras to 1.0.0" in " ".join(messages_of(response))
    assert "say which runbook you used" in registry.get_registry(org.pk).by_name("specialist-packs").body


def test_the_git_form_never_renders_the_token_back(admin_client, org):
    token = "ghp_never-shown-again-42"
    for data in (
        {"git-url": "http://127.0.0.1:1/packs.git", "git-ref": "main", "git-token": token},  # fetch fails
        {"git-url": "http://127.0.0.1:1/packs.git", "git-ref": "", "git-token": token},  # form invalid
    ):
        response = admin_client.post(INSTALL_URL, {"way": "git", **data})
        page = response.content.decode()
        assert response.status_code == 200 and "errorlist" in page
        assert token not in page and 'name="git-token"' in page
    assert not PackRelease.objects.exists()


def test_platform_staff_choose_the_organization_a_pack_is_for(
    client, org, other_org, tmp_path, keys, trusted
):
    staff = get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-123")
    client.force_login(staff)
    assert 'name="upload-organization"' in client.get(INSTALL_URL).content.decode()
    response = upload(client, signed_archive(tmp_path, keys), **{"upload-organization": org.pk})
    release = PackRelease.objects.get()
    assert response.status_code == 302 and release.organization == org
    client.post(preview_url(release))
    assert Pack.objects.get().organization == org and not Pack.objects.filter(organization=other_org).exists()


def _signed_dir(tmp_path, keys, folder="pack", **kwargs):
    root = write_pack(tmp_path / folder, **kwargs)
    sign_with_minisign(root, keys)
    return root


# --- Git and catalog sources, end to end ---------------------------------------------------------

TOKEN = "ghp_pack-admin-token-7c1"  # noqa: S105 - a test token
CHANGED = PERSONA.replace("say which runbook you used", "quote the runbook's title")


@pytest.fixture
def data_dir(settings, tmp_path):
    """Git fetches work in a scratch folder of the data directory (removed after each fetch)."""
    settings.CONFIG = dataclasses.replace(settings.CONFIG, data_dir=tmp_path / "data")


def commit_pack(repository: Runbooks, pack_dir: Path, folder: str, message: str) -> str:
    """Commit `pack_dir` as `folder` of the repository, replacing what the folder held."""
    shutil.rmtree(repository.work / folder, ignore_errors=True)
    for path in sorted(pack_dir.rglob("*")):
        if path.is_file():
            repository.write_bytes(f"{folder}/{path.relative_to(pack_dir).as_posix()}", path.read_bytes())
    return repository.commit(message)


def test_a_pack_from_a_private_git_repository_installs_and_upgrades_from_it(
    admin_client, org, tmp_path, keys, trusted, data_dir
):
    repository = Runbooks(tmp_path / "served", name="packs").create()
    first = commit_pack(repository, _signed_dir(tmp_path, keys, "v1"), "packs/ops-extras", "ops-extras 1.0.0")
    with git_http_server(repository, token=TOKEN) as server:
        fields = {
            "git-url": server.url(),
            "git-ref": "main",
            "git-path": "packs/ops-extras",
            "git-token": TOKEN,
        }
        response = admin_client.post(INSTALL_URL, {"way": "git", **fields})
        assert response.status_code == 302, [
            str(e) for e in response.context["forms"]["git"].non_field_errors()
        ]
        release = PackRelease.objects.get(organization=org)
        assert response.status_code == 302 and response["Location"] == preview_url(release)
        page = admin_client.get(preview_url(release)).content.decode()
        assert first[:12] in page and "packs/ops-extras" in page and TOKEN not in page
        admin_client.post(preview_url(release))
        pack = Pack.objects.get(organization=org)
        assert (pack.source_kind, pack.source_url, pack.source_ref) == ("git", server.url(), "main")

        commit_pack(
            repository,
            _signed_dir(tmp_path, keys, "v2", version="1.1.0", personas={"packs": CHANGED}),
            "packs/ops-extras",
            "ops-extras 1.1.0",
        )
        refused = admin_client.post(pack_url(pack, "upgrade"), follow=True)  # the token is not kept
        assert refused.redirect_chain[-1][0] == pack_url(pack)
        assert "authentication failed" in " ".join(messages_of(refused))
        response = admin_client.post(pack_url(pack, "upgrade"), {"token": TOKEN})
        staged = PackRelease.objects.get(organization=org, status=PackRelease.Status.STAGED)
        assert response["Location"] == preview_url(staged) and staged.version == "1.1.0"
        assert "Changes from 1.0.0 to 1.1.0" in admin_client.get(preview_url(staged)).content.decode()
        admin_client.post(preview_url(staged))
    assert Pack.objects.get(pk=pack.pk).version == "1.1.0"
    assert "quote the runbook's title" in registry.get_registry(org.pk).by_name("specialist-packs").body
    stored = [str(vars(row)) for row in (*Pack.objects.all(), *PackRelease.objects.all())]
    assert not any(TOKEN in text for text in stored)


@dataclasses.dataclass
class Catalog:
    """A static site on loopback: {path: bytes}, each served as it is."""

    files: dict[str, bytes] = dataclasses.field(default_factory=dict)
    port: int = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def publish(self, archives: dict[str, bytes]) -> None:
        """The index lists each {version: archive} of ops-extras, with relative URLs and SHA-256."""
        entries = []
        for version, data in archives.items():
            self.files[f"/catalog/ops-extras-{version}.tar.gz"] = data
            entries.append(
                {
                    "name": "ops-extras",
                    "version": version,
                    "description": "Runbook answers",
                    "url": f"ops-extras-{version}.tar.gz",
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
            )
        self.files["/catalog/index.json"] = json.dumps({"packs": entries}).encode()


@pytest.fixture
def catalog():
    site = Catalog()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            body = site.files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, format: str, *args) -> None:
            return

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    site.port = server.server_address[1]
    with serving(server):
        yield site


def test_a_catalog_lists_its_packs_and_installs_and_upgrades_the_chosen_one(
    admin_client, org, tmp_path, keys, trusted, catalog
):
    catalog.publish({"1.0.0": signed_archive(tmp_path, keys, "v1")})
    index = catalog.url("/catalog/index.json")
    page = admin_client.post(INSTALL_URL, {"way": "catalog", "catalog-index_url": index}).content.decode()
    assert 'id="catalog-packs"' in page and 'data-name="ops-extras"' in page and "Runbook answers" in page
    assert not PackRelease.objects.exists()  # listing fetches no pack

    chosen = {
        "way": "catalog",
        "catalog-index_url": index,
        "catalog-name": "ops-extras",
        "catalog-version": "1.0.0",
    }
    release_url = admin_client.post(INSTALL_URL, chosen)["Location"]
    admin_client.post(release_url)
    pack = Pack.objects.get(organization=org)
    assert (pack.source_kind, pack.source_url, pack.version) == ("catalog", index, "1.0.0")

    catalog.publish(
        {
            "1.0.0": catalog.files["/catalog/ops-extras-1.0.0.tar.gz"],
            "1.1.0": signed_archive(tmp_path, keys, "v2", version="1.1.0", personas={"packs": CHANGED}),
        }
    )
    response = admin_client.post(pack_url(pack, "upgrade"))
    staged = PackRelease.objects.get(organization=org, status=PackRelease.Status.STAGED)
    assert response["Location"] == preview_url(staged) and staged.version == "1.1.0"  # the newest
    admin_client.post(preview_url(staged))
    assert "quote the runbook's title" in registry.get_registry(org.pk).by_name("specialist-packs").body
