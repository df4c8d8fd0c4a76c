"""The knowledge vault's rows: documents (runbooks, uploads) and their searchable passages."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from ops_app.models.tenancy import TenantModel


class KnowledgeDocument(TenantModel):
    """A runbook or reference text the specialists retrieve from (`query_knowledge`).

    `content_hash` identifies what was saved, `indexed_hash` what the passages were built from:
    when they agree the document is searchable as is, and re-ingesting the same text is a no-op.
    """

    class Source(models.TextChoices):
        VAULT = "vault", _("Vault runbook")
        UPLOAD = "upload", _("Upload")

    title = models.CharField(verbose_name=_("title"), max_length=300)
    source_kind = models.CharField(
        verbose_name=_("source kind"), max_length=10, choices=Source.choices, default=Source.UPLOAD
    )
    source = models.CharField(
        verbose_name=_("source"),
        max_length=500,
        help_text=_("Path inside the vault, or the uploaded file's name."),
    )
    content = models.TextField(verbose_name=_("content"), help_text=_("Markdown or plain text."))
    content_hash = models.CharField(verbose_name=_("content hash"), max_length=64, editable=False)
    indexed_hash = models.CharField(verbose_name=_("indexed hash"), max_length=64, blank=True, editable=False)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("knowledge document")
        verbose_name_plural = _("knowledge documents")
        ordering = ["title"]
        constraints = [
            models.UniqueConstraint(
                fields=["organization", "source_kind", "source"], name="knowledge_doc_source_uniq"
            )
        ]
        indexes = [
            models.Index(fields=["organization", "-updated_at"], name="knowledge_doc_org_updated_idx"),
            models.Index(fields=["organization", "title"], name="knowledge_doc_org_title_idx"),
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_indexed(self) -> bool:
        return bool(self.indexed_hash) and self.indexed_hash == self.content_hash


class KnowledgePassage(TenantModel):
    """One retrievable chunk of a document (a Markdown section, or a few paragraphs).

    `search_text` (document title + heading + text) is what the full-text engines index: an FTS5
    table kept in sync by triggers on SQLite, a GIN expression index on PostgreSQL (migration 0004).
    """

    document = models.ForeignKey(KnowledgeDocument, on_delete=models.CASCADE, related_name="passages")
    position = models.PositiveIntegerField()
    heading = models.CharField(max_length=300, blank=True)
    text = models.TextField()
    search_text = models.TextField()

    class Meta:
        verbose_name = _("knowledge passage")
        verbose_name_plural = _("knowledge passages")
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="knowledge_passage_position_uniq")
        ]
        indexes = [models.Index(fields=["organization"], name="knowledge_passage_org_idx")]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.position} {self.heading}"
