"""The knowledge vault in the admin: a document is pasted or uploaded, then indexed after the commit;
Git repositories are pulled on their schedule or with "Sync now" (docs/knowledge.md, "Git sync")."""

from django import forms
from django.contrib import admin, messages
from django.db import transaction
from django.db.models import Count
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ops_app.admin.integrations import NameUniqueInOrganization
from ops_app.admin.scoping import TenantScopedAdmin
from ops_app.admin.test_button import TestOnFormMixin
from ops_app.core.encryption import KEEP
from ops_app.knowledge import git_sync, vault
from ops_app.models import KnowledgeDocument, VaultRepository
from ops_app.tasks import index_knowledge_document, sync_vault_repository


class KnowledgeDocumentForm(forms.ModelForm):
    """Paste Markdown/text, or upload a Markdown, text or PDF file (its text replaces the content)."""

    upload = forms.FileField(required=False, help_text=_("Markdown, text or PDF; up to 5 MB."))

    class Meta:
        model = KnowledgeDocument
        fields = ["title", "source", "content"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["content"].required = False
        self.fields["source"].required = False
        self.fields["title"].required = False

    def clean(self) -> dict:
        data = super().clean()
        upload = data.get("upload")
        if upload is not None:
            name = vault.safe_filename(upload.name)
            try:
                text = vault.extract_text(name, upload.read())
            except vault.KnowledgeInputError as exc:
                raise forms.ValidationError({"upload": str(exc)}) from None
            fallback = name.rsplit(".", 1)[0].replace("-", " ")
            title, body = vault.title_of(text, fallback) if name.endswith(".md") else (fallback, text)
            data["content"] = body
            data["source"] = data.get("source") or name
            data["title"] = data.get("title") or title
        if not (data.get("content") or "").strip():
            raise forms.ValidationError(gettext("Paste the document's text or upload a file."))
        if not data.get("title"):
            raise forms.ValidationError({"title": gettext("A title is required.")})
        data["source"] = data.get("source") or vault.safe_filename(data["title"]) + ".md"
        organization = data.get("organization") or getattr(self, "organization", None)
        clash = KnowledgeDocument.objects.filter(
            organization=organization, source_kind=self.instance.source_kind, source=data["source"]
        ).exclude(pk=self.instance.pk)
        if organization is not None and clash.exists():
            raise forms.ValidationError(
                {"source": gettext("Another document of this organization has this source name.")}
            )
        return data


@admin.register(KnowledgeDocument)
class KnowledgeDocumentAdmin(TenantScopedAdmin):
    form = KnowledgeDocumentForm
    list_display = ("title", "source_kind", "source", "language", "passage_count", "indexed", "updated_at")
    list_filter = ("source_kind", "language")
    search_fields = ("title", "source")
    readonly_fields = (
        "source_kind", "language", "url", "content_hash", "indexed_hash", "created_at", "updated_at"
    )  # fmt: skip

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(passage_total=Count("passages"))

    @admin.display(description=_("passages"), ordering="passage_total")
    def passage_count(self, obj: KnowledgeDocument) -> int:
        return obj.passage_total

    @admin.display(boolean=True)
    def indexed(self, obj: KnowledgeDocument) -> bool:
        return obj.is_indexed

    def save_model(self, request, obj, form, change):
        for field in ("content", "source", "title"):
            setattr(obj, field, form.cleaned_data[field])
        obj.content_hash = vault.content_hash(obj.title, obj.content)
        super().save_model(request, obj, form, change)
        if not obj.is_indexed:
            document_id = obj.pk
            transaction.on_commit(lambda: index_knowledge_document.delay(document_id))


class VaultRepositoryForm(NameUniqueInOrganization, forms.ModelForm):
    """The token and the deploy key are write-only (`SecretFormField`); the URL is checked on save
    (its form and the egress policy), and the authentication must suit its transport."""

    ssh_private_key = VaultRepository._meta.get_field("ssh_private_key").formfield(multiline=True)

    class Meta:
        model = VaultRepository
        fields = [
            "organization",
            "name",
            "url",
            "branch",
            "path",
            "auth",
            "token",
            "ssh_private_key",
            "ssh_known_hosts",
            "enabled",
            "interval_minutes",
        ]

    clash_message = _("Another repository of this organization has this name.")

    def clean(self) -> dict:
        data = super().clean()
        url = data.get("url") or ""
        refused = git_sync.url_refusal(url) if url else None
        if refused:
            self.add_error("url", refused)
        if data.get("branch") and git_sync.branch_refusal(data["branch"]):
            self.add_error("branch", git_sync.branch_refusal(data["branch"]))
        try:
            data["path"] = git_sync.normalised_path(data.get("path") or "")
        except git_sync.SyncError as error:
            self.add_error("path", str(error))
        if url and not refused:
            self._check_auth(data, git_sync.parse_remote(url).scheme)
        return data

    def _check_auth(self, data: dict, scheme: str) -> None:
        auth = data.get("auth")
        if auth == VaultRepository.Auth.SSH_KEY:
            if scheme != "ssh":
                self.add_error("auth", gettext("A deploy key needs an ssh:// or user@host:path URL."))
            if not self._has_secret(data, "ssh_private_key"):
                self.add_error("ssh_private_key", gettext("Paste the deploy key's private key."))
            if not (data.get("ssh_known_hosts") or "").strip():
                self.add_error("ssh_known_hosts", gettext("Paste the server's host key line (ssh-keyscan)."))
        elif scheme == "ssh":
            self.add_error("auth", gettext("An SSH URL needs an SSH deploy key."))
        elif auth == VaultRepository.Auth.TOKEN and not self._has_secret(data, "token"):
            self.add_error("token", gettext("Paste the access token."))

    def _has_secret(self, data: dict, name: str) -> bool:
        value = data.get(name)
        return bool(getattr(self.instance, name)) if value is KEEP else bool(value)


@admin.register(VaultRepository)
class VaultRepositoryAdmin(TestOnFormMixin, TenantScopedAdmin):
    form = VaultRepositoryForm
    list_display = (
        "name",
        "url",
        "branch",
        "path",
        "enabled",
        "last_synced_at",
        "short_commit",
        "last_error",
        "document_count",
    )
    list_filter = ("enabled", "auth")
    search_fields = ("name", "url")
    readonly_fields = ("last_synced_at", "last_commit", "last_error", "last_report")
    actions = ["sync_now"]
    test_label = _("Sync now")
    test_permission = "change"  # a sync writes documents and the row

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(document_total=Count("documents"))

    @admin.display(description=_("documents"), ordering="document_total")
    def document_count(self, obj: VaultRepository) -> int:
        return obj.document_total

    @admin.display(description=_("last commit"), ordering="last_commit")
    def short_commit(self, obj: VaultRepository) -> str:
        return obj.last_commit[:12]

    @admin.action(description=_("Sync now"), permissions=["change"])
    def sync_now(self, request, queryset):
        for repo in queryset:
            self.test_one(request, repo)

    def test_one(self, request, repo: VaultRepository) -> None:
        """Queued with Redis (the worker records the outcome on the row); without it, run here."""
        result = sync_vault_repository.delay(repo.pk)
        if not result.ready():
            self.message_user(request, gettext("%(name)s: sync queued.") % {"name": repo.name}, messages.INFO)
            return
        report = result.get()
        values = {"name": repo.name, "error": report.get("error", "")}
        if report.get("status") == "busy":
            self.message_user(
                request, gettext("%(name)s: a sync is already running.") % values, messages.WARNING
            )
        elif report.get("status") == "error":
            self.message_user(request, gettext("%(name)s: sync FAILED: %(error)s") % values, messages.ERROR)
        else:
            values |= {name: report.get(f"{name}_count", 0) for name in ("indexed", "unchanged", "removed")}
            message = gettext(
                "%(name)s synced: %(indexed)s indexed, %(unchanged)s unchanged, %(removed)s removed."
            )
            self.message_user(request, message % values, messages.SUCCESS)
