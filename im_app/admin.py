from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from im_app import identities
from im_app.connection import test_connection
from im_app.models import IMApp, IMIdentity, OutboxMessage, Platform
from im_app.platforms.registry import PLATFORMS
from ops_app.admin.scoping import TenantScopedAdmin
from ops_app.admin.test_button import TestOnFormMixin
from ops_app.tenancy.scoping import sees_all_tenants

CREDENTIALS = (
    "bot_token",
    "signing_secret",
    "app_token",
    "app_id",
    "app_secret",
    "verification_token",
    "encrypt_key",
    "webhook_secret",
)


@admin.register(IMApp)
class IMAppAdmin(TestOnFormMixin, TenantScopedAdmin):
    """Credentials are encrypted columns, so their form fields are write-only (never rendered back).

    One platform per form: the add view first asks which platform (`?platform=`), then shows
    that platform's credential fields only, and a saved app keeps its platform (its credentials
    mean nothing to another one). The form also says what to set on the platform's side
    (`im_app/platforms/<platform>/setup.py`): absolute webhook URLs with a copy button, scopes,
    events, and for Slack an app manifest."""

    list_display = ("name", "platform", "connection_mode", "enabled", "bot_identity")
    list_filter = ("platform", "enabled")
    actions = ["check_connection"]
    test_label = _("Test connection")
    test_permission = "change"  # a successful Test stores the bot identity

    class Media:
        js = ("js/admin_copy.js",)

    # --- which platform ---------------------------------------------------------------------

    def chosen_platform(self, request, obj=None) -> str | None:
        """The saved app's platform, else the add view's `?platform=` when it names one."""
        if obj is not None and obj.pk:
            return obj.platform
        wanted = request.GET.get("platform", "")
        return wanted if wanted in PLATFORMS else None

    def add_view(self, request, form_url="", extra_context=None):
        """Without a platform, the add view is the choice of one: a page of links, no script."""
        if self.chosen_platform(request) is None:
            if not self.has_add_permission(request):
                raise PermissionDenied
            context = {
                **self.admin_site.each_context(request),
                "opts": self.opts,
                "title": gettext("Add IM app: choose its platform"),
                "platforms": [(value, label, f"?platform={value}") for value, label in Platform.choices],
            }
            return TemplateResponse(request, "admin/im_app/imapp/choose_platform.html", context)
        extra = {**(extra_context or {}), "title": self._add_title(request)}
        return super().add_view(request, form_url, extra_context=extra)

    def _add_title(self, request) -> str:
        label = dict(Platform.choices)[self.chosen_platform(request)]
        return gettext("Add %(platform)s app") % {"platform": label}

    def get_readonly_fields(self, request, obj=None):
        fields = ["bot_identity", "webhook_url", "platform_settings"]
        if obj is not None and obj.pk:
            fields.insert(0, "platform")
        if self.chosen_platform(request, obj) == Platform.SLACK:
            fields.append("slack_manifest")
        return fields

    def get_fieldsets(self, request, obj=None):
        platform = self.chosen_platform(request, obj)
        package = PLATFORMS.get(platform)
        first = ["organization", "name", "platform", "enabled"]
        if package is not None and package.outbound is not None:
            first.append("connection_mode")  # Feishu has no outbound-only mode
        first.append("api_base_url")
        if not sees_all_tenants(request.user):
            first.remove("organization")  # an org admin's apps are their own
        if obj is None or not obj.pk:
            first.remove("platform")  # chosen already: `?platform=`
        connection = ["webhook_url"]
        if platform == Platform.TELEGRAM:
            connection.insert(0, "webhook_path")
        connection += ["platform_settings", *(["slack_manifest"] if platform == Platform.SLACK else [])]
        connection.append("bot_identity")
        credentials = package.credentials if package is not None else CREDENTIALS
        return (
            (None, {"fields": first}),
            (_("Credentials (write-only)"), {"fields": credentials}),
            (_("Who and where"), {"fields": ("allow_from", "reply_language", "summary_channel")}),
            (_("On the platform's side"), {"fields": connection, "classes": ("im-setup",)}),
        )

    def formfield_for_dbfield(self, db_field, request, **kwargs):
        if db_field.name == "api_base_url":
            kwargs["assume_scheme"] = "https"  # every platform's API is https
        return super().formfield_for_dbfield(db_field, request, **kwargs)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        platform = self.chosen_platform(request, obj)
        if obj is None and platform is not None:

            class ChosenPlatformForm(form):
                def __init__(self, *args, **inner):
                    super().__init__(*args, **inner)
                    self.instance.platform = platform  # validated (clean) and saved as chosen

            return ChosenPlatformForm
        return form

    # --- what to set on the platform's side ------------------------------------------------

    def _setup(self, obj: IMApp | None):
        package = PLATFORMS.get(getattr(obj, "platform", ""))
        return package.setup(obj) if package is not None else None

    @admin.display(description=_("Webhook URL"))
    def webhook_url(self, obj: IMApp) -> str:
        if obj is None or obj.pk is None:
            return gettext("Shown once the app is saved.")
        setup = self._setup(obj)
        if setup is None:
            return ""
        parts = [format_html('<p class="im-note">{}</p>', setup.note)] if setup.note else []
        for index, address in enumerate(setup.addresses):
            parts.append(_copyable(index, address.label, address.url))
        if setup.addresses and setup.public_url_missing:
            parts.append(
                format_html(
                    '<p class="im-warning">{}</p>',
                    gettext(
                        "ONGRID_PUBLIC_URL is not set, so these are paths only: the platform needs the "
                        "full address it reaches Ongrid at. Set ONGRID_PUBLIC_URL (e.g. "
                        "https://ongrid.example.com) and reload this page."
                    ),
                )
            )
        return mark_safe("".join(parts))  # noqa: S308 - every part built by format_html

    @admin.display(description=_("Scopes and events to set"))
    def platform_settings(self, obj: IMApp) -> str:
        setup = self._setup(obj)
        if setup is None:
            return ""
        return format_html_join(
            "",
            '<p class="im-checklist-heading"><strong>{}</strong></p><ul class="im-checklist">{}</ul>',
            (
                (
                    checklist.heading,
                    format_html_join("", "<li><code>{}</code></li>", ((i,) for i in checklist.items)),
                )
                for checklist in setup.checklists
            ),
        )

    @admin.display(description=_("Slack app manifest"))
    def slack_manifest(self, obj: IMApp) -> str:
        setup = self._setup(obj)
        if setup is None or not setup.manifest:
            return ""
        return format_html(
            '<p class="im-note">{}</p>'
            '<textarea class="im-manifest" id="im-manifest" rows="16" readonly>{}</textarea>'
            '<p><button type="button" class="button copy-button" data-copy-from="im-manifest" '
            'data-copied="{}">{}</button></p>',
            gettext(
                "api.slack.com/apps → Create New App → From an app manifest: paste this JSON. It "
                "asks for the scopes and events above and fills in the Request URLs."
            ),
            setup.manifest,
            gettext("Copied"),
            gettext("Copy manifest"),
        )

    # --- Test connection ---------------------------------------------------------------------

    @admin.action(description=_("Test connection (calls the platform's auth endpoint)"))
    def check_connection(self, request, queryset) -> None:
        for app in queryset:
            self.test_one(request, app)

    def test_one(self, request, app: IMApp) -> None:
        """Calls the platform's auth endpoint; a success stores the bot identity on the app. What
        is shown is the identity or a short reason, never the platform's words (im_app/connection.py)."""
        ok, answer = test_connection(app)
        if ok:
            verdict = gettext("%(app)s: connected as %(identity)s") % {"app": app.name, "identity": answer}
            self.message_user(request, verdict, messages.SUCCESS)
        else:
            verdict = gettext("%(app)s: failed: %(error)s") % {"app": app.name, "error": answer}
            self.message_user(request, verdict, messages.ERROR)


def _copyable(index: int, label: str, url: str) -> str:
    """A labelled read-only box holding `url` (selectable without script) and its copy button."""
    element = f"im-address-{index}"
    return format_html(
        '<div class="im-address"><label class="im-address-label" for="{}">{}</label>'
        '<input type="text" id="{}" value="{}" readonly size="70">'
        '<button type="button" class="button copy-button" data-copy-from="{}" data-copied="{}">{}</button>'
        "</div>",
        element,
        label,
        element,
        url,
        element,
        gettext("Copied"),
        gettext("Copy"),
    )


class IMIdentityForm(forms.ModelForm):
    """A sender mapped by hand: only to a user it may act as (never platform staff)."""

    def clean(self):
        cleaned = super().clean()
        user, app = cleaned.get("user"), cleaned.get("app")
        if user is not None and app is not None and not identities.may_link(app, user):
            self.add_error(
                "user",
                gettext(
                    "A chat account can only be linked to an active user of the app's organization "
                    "who is not platform staff."
                ),
            )
        return cleaned


@admin.register(IMIdentity)
class IMIdentityAdmin(TenantScopedAdmin):
    """Linked senders: an org admin may unlink one (delete), map it to a user by hand, or confirm
    the user the platform suggested (Slack's profile e-mail)."""

    form = IMIdentityForm
    list_display = ("display_name", "external_id", "app", "user", "suggested_user", "linked_at")
    list_filter = ("app",)
    readonly_fields = ("suggested_user", "code_expires_at", "linked_at")
    exclude = ("code_digest",)
    actions = ["confirm_suggested_user"]

    @admin.action(description=_("Link to the suggested user"))
    def confirm_suggested_user(self, request, queryset) -> None:
        for identity in queryset.select_related("app", "suggested_user__membership"):
            name = identity.display_name or identity.external_id
            if identities.confirm_suggestion(identity):
                message = gettext("%(sender)s: linked to %(user)s.") % {"sender": name, "user": identity.user}
                self.message_user(request, message, messages.SUCCESS)
            else:
                message = gettext("%(sender)s: no suggested user who may be linked.") % {"sender": name}
                self.message_user(request, message, messages.WARNING)


@admin.register(OutboxMessage)
class OutboxMessageAdmin(TenantScopedAdmin):
    """Answers queued while a platform was down (docs/im.md): read-only, written by the relay and
    the drainer alone. `last error` is a short status or class name, never the platform's words."""

    list_display = (
        "created_at",
        "app",
        "kind",
        "status",
        "attempts",
        "last_error",
        "next_attempt_at",
        "delivered_at",
    )
    list_filter = ("status", "kind", "app")
    readonly_fields = (
        "app",
        "session",
        "kind",
        "status",
        "attempts",
        "sent",
        "last_error",
        "next_attempt_at",
        "created_at",
        "delivered_at",
    )
    fields = readonly_fields

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
