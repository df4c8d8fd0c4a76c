"""User agents in the admin: org admins list, search, edit, import and export their organization's
personas; the registry's warnings are shown above the list, and the built-in and mounted personas
beside it (read-only, each viewable as its .md file and copyable into an editable override)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.http import urlencode
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

import agents_app.packs.admin  # noqa: F401 - registers the pack and trusted-key admins
from agents_app.forms import ImportForm, UserAgentForm, UserSkillForm
from agents_app.models import MutatingProposal, UserAgent, UserSkill
from agents_app.personas import registry, user_agents
from agents_app.personas.schema import REVIEWER, persona_to_markdown
from ops_app.admin.scoping import ReadOnlyTenantAdmin, TenantScopedAdmin, visible_organizations
from ops_app.tenancy.scoping import organization_of, sees_all_tenants

# Only the packs of the rows listed (so of the request's organization), never every tenant's.
PACK_FILTER = ("pack", admin.RelatedOnlyFieldListFilter)


class AuthoredInOrganizationAdmin(TenantScopedAdmin):
    """What an organization writes itself (user agents, user skills): the form checks against the
    request's organization, platform staff pick the organization, and the author is recorded."""

    def get_fieldsets(self, request, obj=None):
        fieldsets = super().get_fieldsets(request, obj)
        if sees_all_tenants(request.user):
            return ((None, {"fields": ("organization",)}), *fieldsets)
        return fieldsets

    def get_form(self, request, obj=None, change=False, **kwargs):
        form_class = super().get_form(request, obj, change, **kwargs)

        class RequestForm(form_class):
            def __init__(self, *args, **inner):
                super().__init__(*args, request=request, **inner)

        return RequestForm

    def save_model(self, request, obj, form, change):
        if not change and obj.created_by_id is None:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)


@admin.register(UserAgent)
class UserAgentAdmin(AuthoredInOrganizationAdmin):
    form = UserAgentForm
    list_display = ("name", "description", "permission_mode", "enabled", "pack", "updated_at")
    list_filter = ("enabled", "permission_mode", PACK_FILTER)
    search_fields = ("name", "description", "when_to_use")
    readonly_fields = ("pack", "created_by", "created_at", "updated_at")
    actions = ("enable_agents", "disable_agents")
    fieldsets = (
        (None, {"fields": ("name", "description", "when_to_use", "enabled", "body")}),
        (_("Tools and permissions"), {"fields": ("tools", "disallowed_tools", "permission_mode")}),
        (_("Limits and model"), {"fields": ("max_turns", "max_tool_calls", "model")}),
        (_("Prompt additions"), {"fields": ("critical_reminder", "skills", "extra")}),
        (_("History"), {"fields": ("pack", "created_by", "created_at", "updated_at")}),
    )

    class Media:
        css = {"all": ("css/agents_admin.css",)}

    @admin.action(description=_("Enable selected agents"), permissions=["change"])
    def enable_agents(self, request, queryset):
        self._set_enabled(request, queryset, True)

    @admin.action(description=_("Disable selected agents"), permissions=["change"])
    def disable_agents(self, request, queryset):
        self._set_enabled(request, queryset, False)

    def _set_enabled(self, request, queryset, enabled: bool) -> None:
        # Saved one by one (not queryset.update) so each change reaches the registry.
        changed = 0
        for agent in queryset.exclude(enabled=enabled):
            agent.enabled = enabled
            agent.save(update_fields=["enabled", "updated_at"])
            changed += 1
        if enabled:
            message = ngettext("%(count)d agent enabled.", "%(count)d agents enabled.", changed)
        else:
            message = ngettext("%(count)d agent disabled.", "%(count)d agents disabled.", changed)
        self.message_user(request, message % {"count": changed})

    def get_urls(self):
        own = [
            path("import/", self.admin_site.admin_view(self.import_view), name="agents_app_useragent_import"),
            path(
                "persona/<slug:name>/",
                self.admin_site.admin_view(self.persona_view),
                name="agents_app_useragent_persona",
            ),
            path(
                "persona/<slug:name>/copy/",
                self.admin_site.admin_view(self.copy_view),
                name="agents_app_useragent_copy",
            ),
            path(
                "<int:object_id>/markdown/",
                self.admin_site.admin_view(self.markdown_view),
                name="agents_app_useragent_markdown",
            ),
        ]
        return own + super().get_urls()

    def markdown_view(self, request, object_id: int):
        """ "View as .md": the row as the persona file that imports back to the same row."""
        agent = get_object_or_404(self.get_queryset(request), pk=object_id)
        if not self.has_view_or_change_permission(request, agent):
            raise PermissionDenied
        response = HttpResponse(user_agents.to_markdown(agent), content_type="text/markdown; charset=utf-8")
        if request.GET.get("download"):
            response["Content-Disposition"] = f'attachment; filename="{agent.name}.md"'
        return response

    def import_view(self, request):
        if not self.has_add_permission(request):
            raise PermissionDenied
        organization = organization_of(request.user)
        if organization is None:
            raise PermissionDenied(gettext("Only members of an organization import agents."))
        form = ImportForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            overwrite = form.cleaned_data["overwrite"]
            if overwrite and not self.has_change_permission(request):
                raise PermissionDenied
            try:
                agent = user_agents.import_markdown(
                    form.cleaned_data["markdown"], organization, request.user, overwrite=overwrite
                )
            except ValidationError as exc:
                for message in _messages_of(exc):
                    form.add_error(None, message)
            else:
                messages.success(request, gettext("Imported agent %(name)s.") % {"name": repr(agent.name)})
                for note in agent.import_notes:  # how a Claude Code file was read
                    messages.info(request, note)
                return redirect(reverse("admin:agents_app_useragent_change", args=[agent.pk]))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "form": form,
            "title": gettext("Import a persona file"),
        }
        return TemplateResponse(request, "admin/agents_app/useragent/import.html", context)

    def changelist_view(self, request, extra_context=None):
        organization = organization_of(request.user)
        organization_id = organization.pk if organization else None
        current = registry.get_registry(organization_id)
        extra = {
            # mounted skill files are checked like persona files (a hot reload may break one)
            "registry_warnings": current.warnings() + registry.get_skill_registry().warnings(),
            "file_personas": [
                {"persona": persona, "overridden": overridden, "copyable": persona.name != REVIEWER}
                for persona, overridden in user_agents.file_personas(organization_id)
            ],
            **(extra_context or {}),
        }
        return super().changelist_view(request, extra_context=extra)

    def _file_persona(self, request, name: str):
        if not self.has_view_or_change_permission(request):
            raise PermissionDenied
        persona = registry.file_registry().by_name(name)
        if persona is None:
            raise Http404(gettext("No built-in or mounted persona is named %(name)s.") % {"name": repr(name)})
        return persona

    def _copy_targets(self, request) -> list:
        """The organizations a copy may go to: the admin's own, or any for platform staff."""
        organization = organization_of(request.user)
        if not sees_all_tenants(request.user):
            return [organization] if organization else []
        return list(visible_organizations(request.user).order_by("name"))

    def persona_view(self, request, name: str):
        """A built-in or mounted persona, read-only, as its .md file, with "Copy to edit"."""
        persona = self._file_persona(request, name)
        organization = organization_of(request.user)
        override = None
        if organization is not None:
            override = UserAgent.objects.filter(organization=organization, name=persona.name).first()
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": gettext("%(name)s (%(source)s persona)")
            % {"name": persona.name, "source": persona.source},
            "persona": persona,
            "markdown": persona_to_markdown(persona),
            "override": override,
            "copy_targets": self._copy_targets(request),
            "can_copy": self.has_add_permission(request) and persona.name != REVIEWER,
        }
        return TemplateResponse(request, "admin/agents_app/useragent/persona.html", context)

    def copy_view(self, request, name: str):
        """ "Copy to edit" (POST): the add form prefilled from a file persona, a draft that is not
        live until the admin saves it; or the organization's existing override, untouched."""
        persona = self._file_persona(request, name)
        if request.method != "POST" or not self.has_add_permission(request) or persona.name == REVIEWER:
            raise PermissionDenied
        targets = self._copy_targets(request)
        chosen = request.POST.get("organization")
        if len(targets) > 1:
            targets = [org for org in targets if str(org.pk) == chosen]
        if len(targets) != 1:
            messages.error(request, gettext("Choose the organization the copy is for."))
            return redirect(reverse("admin:agents_app_useragent_persona", args=[persona.name]))
        existing = user_agents.override_of(persona, targets[0])
        if existing is not None:  # a second click never overwrites edits
            messages.info(
                request,
                gettext("%(organization)s already has an agent named %(name)s; here it is.")
                % {"organization": targets[0], "name": repr(persona.name)},
            )
            return redirect(reverse("admin:agents_app_useragent_change", args=[existing.pk]))
        query = urlencode({"copy_of": persona.name, "organization": targets[0].pk})
        return redirect(f"{reverse('admin:agents_app_useragent_add')}?{query}")

    def _draft_of(self, request):
        """The file persona the add form copies (`?copy_of=<name>`), or None."""
        name = request.GET.get("copy_of")
        persona = registry.file_registry().by_name(name) if name else None
        return persona if persona is not None and persona.name != REVIEWER else None

    def get_changeform_initial_data(self, request):
        """The add form of "Copy to edit" (`?copy_of=<persona>`) starts from that persona."""
        initial = super().get_changeform_initial_data(request)
        initial.pop("copy_of", None)
        persona = self._draft_of(request)
        if persona is not None:
            initial.update(user_agents.draft_from(persona))
        return initial

    def add_view(self, request, form_url="", extra_context=None):
        persona = self._draft_of(request)
        if persona is not None and request.method == "GET":
            messages.info(
                request,
                gettext(
                    "A draft copy of the %(source)s persona %(name)s: nothing changes until you save "
                    "it; once saved it replaces that persona from the next chat on."
                )
                % {"name": repr(persona.name), "source": persona.source},
            )
        return super().add_view(request, form_url, extra_context)


@admin.register(UserSkill)
class UserSkillAdmin(AuthoredInOrganizationAdmin):
    """An organization's skills (docs/skills.md); the skill files' parse warnings show above the list."""

    form = UserSkillForm
    list_display = ("name", "description", "always", "enabled", "pack", "updated_at")
    list_filter = ("enabled", "always", PACK_FILTER)
    search_fields = ("name", "description", "when_to_use")
    readonly_fields = ("pack", "created_by", "created_at", "updated_at")
    fieldsets = (
        (None, {"fields": ("name", "description", "when_to_use", "enabled", "always", "body")}),
        (_("Extra files"), {"fields": ("files",)}),
        (_("History"), {"fields": ("pack", "created_by", "created_at", "updated_at")}),
    )

    def changelist_view(self, request, extra_context=None):
        """Warnings of the skill files (a SKILL.md that does not parse) shown above the list."""
        files = registry.get_skill_registry()
        for warning in files.warnings():
            messages.warning(request, warning)
        return super().changelist_view(request, extra_context=extra_context)


def _messages_of(exc: ValidationError) -> list[str]:
    if hasattr(exc, "error_dict"):
        return [f"{field}: {message}" for field, errors in exc.message_dict.items() for message in errors]
    return list(exc.messages)


@admin.register(MutatingProposal)
class MutatingProposalAdmin(ReadOnlyTenantAdmin):
    """Proposals are evidence of who allowed which change: listed and inspected, never edited here."""

    list_display = (
        "created_at",
        "tool",
        "target",
        "persona",
        "decision",
        "human_approver",
        "execution_status",
        "executed_at",
    )
    list_filter = ("decision", "execution_status", "tool", "permission_mode")
    search_fields = ("tool", "target", "tool_call_id")
    date_hierarchy = "created_at"
    list_select_related = ("human_approver",)
    raw_id_fields = ("session", "root_session", "reviewer_session", "human_approver")
