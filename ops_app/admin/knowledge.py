"""The knowledge vault in the admin: a document is pasted or uploaded, then indexed after the commit."""

from django import forms
from django.contrib import admin
from django.db import transaction
from django.db.models import Count
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from ops_app.admin.scoping import TenantScopedAdmin
from ops_app.knowledge import vault
from ops_app.models import KnowledgeDocument
from ops_app.tasks import index_knowledge_document


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
    list_display = ("title", "source_kind", "source", "passage_count", "indexed", "updated_at")
    list_filter = ("source_kind",)
    search_fields = ("title", "source")
    readonly_fields = ("source_kind", "content_hash", "indexed_hash", "created_at", "updated_at")

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
