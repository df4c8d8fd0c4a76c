"""The one writer of packs (docs/packs.md): stage, install, upgrade, roll back, uninstall.

Every step is atomic and scoped to one organization. Fetching a pack writes only a *staged*
release (the archive, kept byte for byte); installing it re-reads and re-verifies that archive
(a trusted key may have been removed since the preview), refuses what the preview refuses, and
then writes the pack's user agents, user skills and MCP servers as ordinary rows. Their model
signals bump the organization's RegistryVersion, so every process's next spawn sees the new
personas and skills without a restart; the change-event recorder logs each row (the actor named
by `acting_as`), and one audit row per operation says who installed what, from where, signed by
whom.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit

from asgiref.sync import async_to_sync
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from agents_app.models import Pack, PackRelease, TrustedPackKey, UserAgent, UserSkill
from agents_app.packs import archive, manifest, plan, signatures, sources
from agents_app.packs.contents import MANIFEST, McpTemplate, PackContents, PackError, PackFiles
from agents_app.personas import skills as skill_sources
from agents_app.personas import user_agents, user_skills
from audit_app import recorder
from ops_app.estate.change_events import acting_as
from ops_app.models import McpServer, Organization
from ops_app.tenancy.scoping import organization_of, sees_all_tenants

log = logging.getLogger(__name__)

INSTALL_TOOL, UNINSTALL_TOOL, ROLLBACK_TOOL = "pack_install", "pack_uninstall", "pack_rollback"
# Superseded releases kept per pack for rollbacks (the newest ones); older archives are dropped.
KEPT_RELEASES = 5
Status = PackRelease.Status
SOURCE_COMMIT = plan.SOURCE_COMMIT


def may_manage(user, organization) -> bool:
    """Org admins of `organization` and platform staff install, upgrade, roll back, uninstall."""
    if user is None or not getattr(user, "is_authenticated", False):
        return False
    if sees_all_tenants(user):
        return True
    own = organization_of(user)
    return own is not None and own.pk == organization.pk and user_agents.is_org_admin(user)


def _require_manager(user, organization) -> None:
    if not may_manage(user, organization):
        raise PermissionDenied(_("Only an org admin or platform staff may install, upgrade or remove packs."))


# --- fetching: a staged release -----------------------------------------------------------------


def stage(
    organization,
    files: PackFiles,
    *,
    source_kind: str,
    source_url: str = "",
    source_ref: str = "",
    source_path: str = "",
    user,
) -> PackRelease:
    """Check a fetched pack (manifest, every file's hash, the signature) and keep it as a staged
    release for the preview; nothing else is written. PackError says what is wrong."""
    _require_manager(user, organization)
    contents = manifest.read_contents(files)
    signer = signer_of(organization, contents)
    refusals = plan.reserved_refusals(contents)
    if refusals:
        raise PackError(" ".join(refusals))
    data = archive.build_archive(files)
    with transaction.atomic():
        PackRelease.objects.filter(
            organization=organization, name=contents.manifest.name, status=Status.STAGED
        ).delete()
        return PackRelease.objects.create(
            organization=organization,
            name=contents.manifest.name,
            version=contents.manifest.version,
            status=Status.STAGED,
            manifest=contents.manifest.as_dict(),
            archive=data,
            sha256=hashlib.sha256(data).hexdigest(),
            source_kind=source_kind,
            source_url=public_url(source_url)[:500],
            source_ref=source_ref[:200],
            source_path=source_path[:300],
            signed_by=signer,
            created_by=user if getattr(user, "pk", None) else None,
        )


def stage_upload(organization, data: bytes, filename: str, *, user) -> PackRelease:
    """An uploaded .tar.gz / .zip."""
    _require_manager(user, organization)  # before anything is fetched
    files = archive.read_archive(data, filename)
    return stage(organization, files, source_kind=Pack.SourceKind.FILE, source_url=filename, user=user)


def stage_git(organization, url: str, ref: str, path: str = "", *, token: str = "", user) -> PackRelease:
    """The pack at `path` of a Git repository's `ref`; the token is used for this fetch only."""
    _require_manager(user, organization)  # before anything is fetched
    files, commit = sources.fetch_git(url, ref, path, token=token)
    release = stage(
        organization,
        files,
        source_kind=Pack.SourceKind.GIT,
        source_url=url,
        source_ref=ref,
        source_path=path,
        user=user,
    )
    # The ref moves; the commit says which tree this release is (shown beside its version).
    release.manifest = {**release.manifest, SOURCE_COMMIT: commit}
    release.save(update_fields=["manifest"])
    return release


def stage_catalog(organization, index_url: str, name: str, version: str = "", *, user) -> PackRelease:
    """The named pack (its newest version, or `version`) from a catalog index."""
    _require_manager(user, organization)  # before anything is fetched
    files, _entry = sources.fetch_from_catalog(index_url, name, version)
    return stage(organization, files, source_kind=Pack.SourceKind.CATALOG, source_url=index_url, user=user)


def public_url(url: str) -> str:
    """`url` without user name and password: a pasted `https://user:token@host/...` keeps no secret."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def signer_of(organization, contents: PackContents) -> str:
    """ "name (key id)" of the trusted key that signed `contents`, "" for an unsigned pack the
    organization accepts; PackError otherwise."""
    if contents.signature is None:
        if organization.allow_unsigned_packs:
            return ""
        raise PackError(_("This pack is not signed, and your organization only installs signed packs."))
    trusted = _trusted_keys(organization)
    if not trusted:
        raise PackError(
            _(
                "This pack is signed, but your organization trusts no pack key yet: add its author's "
                "public key under Trusted pack keys first."
            )
        )
    try:
        key = signatures.verify(contents.files[MANIFEST], contents.signature, [key for _row, key in trusted])
    except signatures.SignatureError as exc:
        raise PackError(_("The pack's signature is refused: %(reason)s") % {"reason": exc}) from None
    row = next(row for row, trusted_key in trusted if trusted_key.raw == key.raw)
    return f"{row.name} ({row.key_id})"[:150]


def _trusted_keys(organization) -> list[tuple[TrustedPackKey, signatures.PublicKey]]:
    keys = []
    for row in TrustedPackKey.objects.filter(organization=organization):
        try:
            keys.append((row, signatures.parse_public_key(row.public_key)))
        except signatures.SignatureError:
            log.warning("trusted pack key %s (id %s) does not parse; ignored", row.name, row.pk)
    return keys


def release_contents(release: PackRelease) -> PackContents:
    """A stored release read again from its archive, checked file by file against its manifest."""
    data = bytes(release.archive)
    if hashlib.sha256(data).hexdigest() != release.sha256:
        raise PackError(_("The stored archive of %(pack)s changed since it was fetched.") % {"pack": release})
    return manifest.read_contents(archive.read_archive(data, f"{release.name}-{release.version}.tar.gz"))


# --- installing -------------------------------------------------------------------------------


def install(release: PackRelease, user, *, confirm_coordinator: bool = False) -> Pack:
    """Install a staged release (a first install or an upgrade) as previewed."""
    return _install(release, user, expected=Status.STAGED, confirm=confirm_coordinator, tool=INSTALL_TOOL)


def rollback(pack: Pack, user) -> Pack:
    """Reinstall the newest superseded release of `pack`, exactly its stored archive."""
    _require_manager(user, pack.organization)
    target = rollback_target(pack)
    if target is None:
        raise PackError(_("There is no earlier version to roll back to."))
    # It was confirmed when it was first installed; only org admins get this far.
    return _install(target, user, expected=Status.SUPERSEDED, confirm=True, tool=ROLLBACK_TOOL)


def rollback_target(pack: Pack) -> PackRelease | None:
    """The release a rollback would reinstall (for the pack's page), or None."""
    return (
        PackRelease.objects.filter(organization_id=pack.organization_id, pack=pack, status=Status.SUPERSEDED)
        .order_by("-installed_at", "-created_at")
        .first()
    )


def _install(release: PackRelease, user, *, expected: str, confirm: bool, tool: str) -> Pack:
    organization = Organization.objects.get(pk=release.organization_id)
    _require_manager(user, organization)
    started, clock = timezone.now(), time.monotonic()
    try:
        with transaction.atomic(), acting_as(user):
            release = _locked_release(organization, release.pk, expected)
            installed = (
                Pack.objects.select_for_update().filter(organization=organization, name=release.name).first()
            )
            from_version = installed.version if installed else ""
            contents, signer = _verified(organization, release, user, confirm=confirm)
            previous_servers = list(installed.mcp_servers or []) if installed else []
            pack = _save_pack(organization, installed, release, contents, signer, user)
            _apply(pack, contents, previous_servers, user)
            _retire(pack, release, signer)
            verb = "rolled back to" if tool == ROLLBACK_TOOL else "upgraded to" if installed else "installed"
            summary = _summary(pack, verb)
            _audit_on_commit(pack, user, tool, started, clock, from_version=from_version, summary=summary)
    except IntegrityError:
        skill_sources.forget()
        raise PackError(_("Another change to this pack ran at the same time; try again.")) from None
    except BaseException:
        skill_sources.forget()  # its cache may hold skills of the rolled-back transaction
        raise
    return pack


def _verified(organization, release: PackRelease, user, *, confirm: bool) -> tuple[PackContents, str]:
    """The release's contents and signer, checked again as at the preview (keys, refusals)."""
    contents = release_contents(release)
    signer = signer_of(organization, contents)
    previewed = plan.preview(organization, contents, release=release, user=user)
    if previewed.refusals:
        raise PackError(" ".join(previewed.refusals))
    if previewed.has_coordinator and not confirm:
        raise PackError(
            _("This pack replaces the coordinator ('default'): an org admin must confirm it explicitly.")
        )
    return contents, signer


def _locked_release(organization, pk: int, expected: str) -> PackRelease:
    release = PackRelease.objects.select_for_update().filter(organization=organization, pk=pk).first()
    if release is None or release.status != expected:
        raise PackError(
            _("This version of the pack is no longer waiting to be installed; fetch the pack again.")
        )
    return release


def _save_pack(organization, installed, release, contents: PackContents, signer: str, user) -> Pack:
    pack = installed or Pack(organization=organization, name=release.name)
    meta = contents.manifest
    pack.version = meta.version[:50]
    pack.description = meta.description[:500]
    pack.author = meta.author[:200]
    pack.source_kind = release.source_kind
    pack.source_url = release.source_url
    pack.source_ref = release.source_ref
    pack.source_path = release.source_path
    pack.signed_by = signer
    pack.mcp_servers = [plan.mcp_record(server) for server in meta.mcp_servers]
    pack.installed_by = user if getattr(user, "pk", None) else None
    pack.installed_at = timezone.now()  # this version's install (auto_now_add only fills a new row)
    pack.save()
    return pack


def _apply(pack: Pack, contents: PackContents, previous_servers: list[dict], user) -> None:
    """Skills first (the pack's personas may name them), then personas, then MCP servers; what the
    pack no longer has is deleted last."""
    dropped_agents = _upsert_skills_and_agents(pack, contents, user)
    _upsert_servers(pack, contents.manifest.mcp_servers, previous_servers)
    for row in dropped_agents:
        row.delete()


def _upsert_skills_and_agents(pack: Pack, contents: PackContents, user) -> list:
    skills = {row.name: row for row in UserSkill.objects.filter(pack=pack)}
    for skill in contents.skills:
        row = plan.skill_row(pack.organization, skill, skills.pop(skill.name, None))
        _new_row(row, pack, user)
        _check(_("skill"), skill.name, user_skills.field_errors(row))
        row.save()
    agents = {row.name: row for row in UserAgent.objects.filter(pack=pack)}
    for persona in contents.personas:
        row = plan.agent_row(pack.organization, persona, agents.pop(persona.name, None))
        _new_row(row, pack, user)
        try:
            user_agents.validate(row, user)
        except ValidationError as exc:
            _check(_("persona"), persona.name, exc.message_dict)
        row.save()
    for row in skills.values():  # no persona of this release needs them any more
        row.delete()
    return list(agents.values())


def _new_row(row, pack: Pack, user) -> None:
    if row.pk is None:
        row.pack = pack
        row.enabled = True
        row.created_by = user if getattr(user, "pk", None) else None


def _check(kind: str, name: str, errors: dict[str, list[str]]) -> None:
    if errors:
        messages = [f"{field}: {message}" for field, items in errors.items() for message in items]
        raise PackError(
            _("%(kind)s %(name)s: %(message)s")
            % {"kind": kind, "name": repr(name), "message": " ".join(messages)}
        )


def _upsert_servers(pack: Pack, templates: tuple[McpTemplate, ...], previous: list[dict]) -> None:
    """Servers are created disabled with blank headers. One whose URL or transport changed is
    disabled and its headers cleared: the values an admin filled were meant for the old server."""
    ours = {record["name"] for record in previous}
    organization = pack.organization
    for template in templates:
        row = McpServer.objects.filter(organization=organization, name=template.name).first()
        if row is None or template.name not in ours:
            row = McpServer(organization=organization, name=template.name, headers="", enabled=False)
        elif (row.url, row.transport) != (template.url, template.transport):
            row.headers, row.enabled = "", False
        row.transport, row.url, row.timeout = template.transport, template.url, template.timeout
        _check(_("MCP server"), template.name, plan.mcp_errors(organization, template))
        row.save()
    kept = {template.name for template in templates}
    for name in sorted(ours - kept):
        for row in McpServer.objects.filter(organization=organization, name=name):
            row.delete()


def _retire(pack: Pack, release: PackRelease, signer: str) -> None:
    """`release` becomes the installed one; the one before it is kept for a rollback."""
    PackRelease.objects.filter(pack=pack, status=Status.INSTALLED).exclude(pk=release.pk).update(
        status=Status.SUPERSEDED
    )
    release.pack = pack
    release.status = Status.INSTALLED
    release.installed_at = timezone.now()
    release.signed_by = signer
    release.save(update_fields=["pack", "status", "installed_at", "signed_by"])
    kept = PackRelease.objects.filter(pack=pack, status=Status.SUPERSEDED).order_by("-installed_at", "-pk")
    stale = list(kept.values_list("pk", flat=True)[KEPT_RELEASES:])
    if stale:
        PackRelease.objects.filter(pk__in=stale).delete()


# --- upgrading and uninstalling -------------------------------------------------------------------


def upgrade_from_source(pack: Pack, user, *, token: str = "") -> PackRelease:
    """Fetch `pack` again from where it came from (its Git ref, its catalog's newest version) and
    stage it for the upgrade preview. An uploaded pack is upgraded by uploading the new archive."""
    organization = Organization.objects.get(pk=pack.organization_id)
    _require_manager(user, organization)
    if pack.source_kind == Pack.SourceKind.GIT:
        return stage_git(
            organization, pack.source_url, pack.source_ref, pack.source_path, token=token, user=user
        )
    if pack.source_kind == Pack.SourceKind.CATALOG:
        return stage_catalog(organization, pack.source_url, pack.name, user=user)
    raise PackError(
        _("This pack was installed from an uploaded file: upload the new version's archive to upgrade it.")
    )


def uninstall(pack: Pack, user) -> dict:
    """Remove the pack and everything it installed; returns what was removed, by kind."""
    organization = Organization.objects.get(pk=pack.organization_id)
    _require_manager(user, organization)
    started, clock = timezone.now(), time.monotonic()
    with transaction.atomic(), acting_as(user):
        locked = Pack.objects.select_for_update().filter(organization=organization, pk=pack.pk).first()
        if locked is None:
            raise PackError(_("This pack is not installed any more."))
        removed = plan.removals(locked)
        for row in UserAgent.objects.filter(pack=locked):
            row.delete()
        for row in UserSkill.objects.filter(pack=locked):
            row.delete()
        for row in McpServer.objects.filter(organization=organization, name__in=removed.mcp_servers):
            row.delete()
        summary = _summary(locked, "uninstalled", removed)
        _audit_on_commit(
            locked, user, UNINSTALL_TOOL, started, clock, from_version=locked.version, summary=summary
        )
        locked.delete()  # its releases go with it
    return removed.as_dict()


# --- the audit ----------------------------------------------------------------------------------


def _summary(pack: Pack, verb: str, parts: plan.Removals | None = None) -> str:
    """The audit row's one line (English, like the rest of the audit's own words)."""
    parts = parts or plan.removals(pack)
    return (
        f"{verb} {pack.name} {pack.version}: {len(parts.agents)} agent(s), {len(parts.skills)} skill(s), "
        f"{len(parts.mcp_servers)} MCP server(s)"
    )


def _audit_on_commit(
    pack: Pack, user, tool: str, started: datetime, clock: float, *, from_version: str, summary: str
) -> None:
    """One audit row for the operation, written once its transaction has committed."""
    arguments = {
        "pack": pack.name,
        "version": pack.version,
        "from_version": from_version,
        "source_kind": pack.source_kind,
        "source_url": pack.source_url,
        "signed_by": pack.signed_by,
    }
    fields = {
        "organization_id": pack.organization_id,
        "session_id": None,
        "user_id": getattr(user, "pk", None),
        "persona": "",
        "tool_call_id": f"{tool}-{pack.pk}-{int(started.timestamp() * 1000)}",
        "tool": tool,
        "tool_class": "write",
        "arguments_raw": json.dumps(arguments),
        "content": summary,
        "status": "ok",
        "error": "",
        "started_at": started,
    }

    def write() -> None:
        async_to_sync(recorder.record_tool_call)(**fields, duration_ms=int((time.monotonic() - clock) * 1000))

    transaction.on_commit(write)
