"""Packs in the admin (docs/packs.md): the installed packs with their version and source, the
"Install a pack" page (upload, Git, catalog), the preview an install is confirmed from, and a
pack's page with its agents, skills, MCP servers and releases (Upgrade, Roll back, Uninstall).
Trusted pack keys are edited beside them.

Everything here goes through `agents_app.packs.install`, the one writer; these views only choose
what to show. Org admins and platform staff change packs; auditors may look; other tenants'
packs, releases and keys are never found (404).
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from agents_app.models import Pack, PackRelease, TrustedPackKey, UserAgent, UserSkill
from agents_app.packs import install, plan, sources
from agents_app.packs.contents import PackError
from agents_app.packs.forms import CatalogForm, GitForm, TrustedPackKeyForm, UpgradeForm, UploadForm
from agents_app.personas import user_agents
from ops_app.admin.scoping import TenantScopedAdmin
from ops_app.models import McpServer
from ops_app.tenancy.scoping import organization_of, sees_all_tenants

WAYS = {"upload": UploadForm, "git": GitForm, "catalog": CatalogForm}


@admin.register(Pack)
class PackAdmin(TenantScopedAdmin):
    list_display = ("name", "version", "source_kind", "source_url", "signer", "installed_by", "installed_at")
    list_filter = ("source_kind",)
    search_fields = ("name", "description", "author", "source_url")
    list_select_related = ("installed_by",)

    @admin.display(description=_("signed by"), ordering="signed_by")
    def signer(self, pack: Pack) -> str:
        return pack.signed_by or gettext("unsigned")

    # Packs change only through the install, upgrade, rollback and uninstall pages.
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    def get_urls(self):
        view = self.admin_site.admin_view
        own = [
            path("install/", view(self.install_view), name="agents_app_pack_install"),
            path("release/<int:release_id>/", view(self.preview_view), name="agents_app_pack_preview"),
            path("<int:object_id>/upgrade/", view(self.upgrade_view), name="agents_app_pack_upgrade"),
            path("<int:object_id>/rollback/", view(self.rollback_view), name="agents_app_pack_rollback"),
            path("<int:object_id>/uninstall/", view(self.uninstall_view), name="agents_app_pack_uninstall"),
        ]
        return own + super().get_urls()

    def _context(self, request: HttpRequest, title: str, **values) -> dict:
        return {**self.admin_site.each_context(request), "opts": self.model._meta, "title": title, **values}

    def _managed_pack(self, request: HttpRequest, object_id: int) -> Pack:
        """The request's organization's pack (404 for another tenant's), if the user may change it."""
        pack = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not install.may_manage(request.user, pack.organization):
            raise PermissionDenied
        return pack

    def changelist_view(self, request, extra_context=None):
        may_install = _may_install(request)
        return super().changelist_view(request, {"may_install": may_install, **(extra_context or {})})

    # --- installing ---------------------------------------------------------------------------

    def install_view(self, request: HttpRequest):
        """Three ways to fetch a pack; each stages a release and opens its preview."""
        if not _may_install(request):
            raise PermissionDenied
        way = request.POST.get("way") if request.method == "POST" else None
        forms = {
            key: form_class(
                request.POST if key == way else None,
                request.FILES if key == way else None,
                prefix=key,
                user=request.user,
            )
            for key, form_class in WAYS.items()
        }
        catalog = None
        if way in forms and forms[way].is_valid():
            form = forms[way]
            try:
                if way == "catalog" and not form.cleaned_data["name"]:
                    catalog = sources.fetch_catalog(form.cleaned_data["index_url"])
                else:
                    release = self._stage(request, way, form.cleaned_data)
                    return redirect(reverse("admin:agents_app_pack_preview", args=[release.pk]))
            except PackError as exc:
                form.add_error(None, str(exc))
        context = self._context(
            request,
            gettext("Install a pack"),
            forms=forms,
            way=way,
            catalog=catalog,
            catalog_url=forms["catalog"].cleaned_data.get("index_url") if catalog is not None else "",
        )
        return TemplateResponse(request, "admin/agents_app/pack/install.html", context)

    def _stage(self, request: HttpRequest, way: str, data: dict) -> PackRelease:
        organization = data.get("organization") or organization_of(request.user)
        if organization is None:
            raise PermissionDenied
        if way == "upload":
            content, filename = data["archive"]
            return install.stage_upload(organization, content, filename, user=request.user)
        if way == "git":
            return install.stage_git(
                organization, data["url"], data["ref"], data["path"], token=data["token"], user=request.user
            )
        return install.stage_catalog(
            organization, data["index_url"], data["name"], data["version"], user=request.user
        )

    def preview_view(self, request: HttpRequest, release_id: int):
        """What installing a staged release would do; POST confirms and installs it."""
        releases = PackRelease.objects.for_user(request.user).filter(status=PackRelease.Status.STAGED)
        release = get_object_or_404(releases, pk=release_id)
        if not install.may_manage(request.user, release.organization):
            raise PermissionDenied
        try:
            contents = install.release_contents(release)
        except PackError as exc:
            messages.error(request, str(exc))
            return redirect(reverse("admin:agents_app_pack_install"))
        if request.method == "POST":
            confirmed = bool(request.POST.get("confirm_coordinator"))
            confirmed = confirmed and user_agents.may_override_coordinator(request.user)
            try:
                pack = install.install(release, request.user, confirm_coordinator=confirmed)
            except PackError as exc:
                messages.error(request, str(exc))
            else:
                messages.success(
                    request,
                    gettext("Installed %(pack)s %(version)s: the next chat uses it.")
                    % {"pack": pack.name, "version": pack.version},
                )
                return redirect(reverse("admin:agents_app_pack_change", args=[pack.pk]))
        previewed = plan.preview(release.organization, contents, release=release, user=request.user)
        context = self._context(
            request,
            gettext("Preview: %(pack)s %(version)s") % {"pack": previewed.name, "version": previewed.version},
            preview=previewed,
            release=release,
            may_confirm_coordinator=user_agents.may_override_coordinator(request.user),
        )
        return TemplateResponse(request, "admin/agents_app/pack/preview.html", context)

    # --- a pack's page ------------------------------------------------------------------------

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The pack's page: what it installed, its releases, and what can be done with it."""
        pack = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not self.has_view_permission(request, pack):
            raise PermissionDenied
        servers = {s.name: s for s in McpServer.objects.filter(organization_id=pack.organization_id)}
        context = self._context(
            request,
            str(pack),
            pack=pack,
            agents=UserAgent.objects.filter(pack=pack).order_by("name"),
            skills=UserSkill.objects.filter(pack=pack).order_by("name"),
            servers=[(record, servers.get(record["name"])) for record in pack.mcp_servers or []],
            releases=pack.releases.exclude(status=PackRelease.Status.STAGED).order_by("-installed_at"),
            rollback_target=install.rollback_target(pack),
            may_manage=install.may_manage(request.user, pack.organization),
            upgrade_form=UpgradeForm() if pack.source_kind == Pack.SourceKind.GIT else None,
            object_id=pack.pk,
        )
        return TemplateResponse(request, "admin/agents_app/pack/detail.html", context)

    def upgrade_view(self, request: HttpRequest, object_id: int):
        """Fetch the pack again from its source (POST), then its preview shows the diff."""
        pack = self._managed_pack(request, object_id)
        if request.method != "POST":
            return redirect(reverse("admin:agents_app_pack_change", args=[pack.pk]))
        form = UpgradeForm(request.POST)
        token = form.cleaned_data["token"] if form.is_valid() else ""
        try:
            release = install.upgrade_from_source(pack, request.user, token=token)
        except PackError as exc:
            messages.error(request, str(exc))
            return redirect(reverse("admin:agents_app_pack_change", args=[pack.pk]))
        return redirect(reverse("admin:agents_app_pack_preview", args=[release.pk]))

    def rollback_view(self, request: HttpRequest, object_id: int):
        """Confirm, then reinstall the previous version's stored archive."""
        pack = self._managed_pack(request, object_id)
        target = install.rollback_target(pack)
        back = redirect(reverse("admin:agents_app_pack_change", args=[pack.pk]))
        if target is None:
            messages.error(request, gettext("There is no earlier version to roll back to."))
            return back
        if request.method == "POST":
            try:
                pack = install.rollback(pack, request.user)
            except PackError as exc:
                messages.error(request, str(exc))
            else:
                messages.success(
                    request,
                    gettext("Rolled back %(pack)s to %(version)s.")
                    % {"pack": pack.name, "version": pack.version},
                )
            return back
        try:
            contents = install.release_contents(target)
        except PackError as exc:
            messages.error(request, str(exc))
            return back
        previewed = plan.preview(pack.organization, contents, release=target, user=request.user)
        title = gettext("Roll back %(pack)s to %(version)s") % {"pack": pack.name, "version": target.version}
        context = self._context(
            request, title, pack=pack, target=target, preview=previewed, object_id=pack.pk
        )
        return TemplateResponse(request, "admin/agents_app/pack/rollback.html", context)

    def uninstall_view(self, request: HttpRequest, object_id: int):
        """A confirmation listing what goes, then the uninstall (POST)."""
        pack = self._managed_pack(request, object_id)
        if request.method == "POST":
            try:
                removed = install.uninstall(pack, request.user)
            except PackError as exc:
                messages.error(request, str(exc))
                return redirect(reverse("admin:agents_app_pack_change", args=[pack.pk]))
            count = sum(len(names) for names in removed.values())
            messages.success(
                request,
                gettext("Uninstalled %(pack)s: %(count)d item(s) removed.")
                % {"pack": pack.name, "count": count},
            )
            return redirect(reverse("admin:agents_app_pack_changelist"))
        context = self._context(
            request,
            gettext("Uninstall %(pack)s") % {"pack": pack.name},
            pack=pack,
            removals=plan.removals(pack),
            object_id=pack.pk,
        )
        return TemplateResponse(request, "admin/agents_app/pack/uninstall.html", context)


def _may_install(request: HttpRequest) -> bool:
    """Org admins (into their organization) and platform staff (into any) install packs."""
    user = request.user
    if sees_all_tenants(user):
        return True
    organization = organization_of(user)
    return organization is not None and install.may_manage(user, organization)


@admin.register(TrustedPackKey)
class TrustedPackKeyAdmin(TenantScopedAdmin):
    """The minisign public keys whose signatures the organization accepts on packs."""

    form = TrustedPackKeyForm
    list_display = ("name", "key_id", "created_by", "created_at")
    search_fields = ("name", "key_id")
    readonly_fields = ("key_id", "created_by", "created_at")

    def save_model(self, request, obj, form, change):
        if not change and obj.created_by_id is None:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
