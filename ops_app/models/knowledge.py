"""The knowledge vault's rows: documents (runbooks, uploads) and their searchable passages."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from ops_app.core.encryption import EncryptedTextField
from ops_app.models.tenancy import TenantModel


class VaultRepository(TenantModel):
    """A Git repository an organization's runbooks are pulled from (docs/knowledge.md, "Git sync").

    Each Markdown file under `path` on `branch` becomes a `repository` document; a file deleted
    upstream removes its document at the next sync. The credential is encrypted and write-only;
    `sync_claimed_until` lets one process at a time sync a repository.
    """

    class Auth(models.TextChoices):
        NONE = "none", _("None (a public repository)")
        TOKEN = "token", _("HTTPS token")
        SSH_KEY = "ssh_key", _("SSH deploy key")

    name = models.SlugField(verbose_name=_("name"), max_length=60, help_text=_("e.g. runbooks."))
    url = models.CharField(
        verbose_name=_("repository URL"),
        max_length=500,
        help_text=_("https://git.example.com/ops/runbooks.git or ssh://git@git.example.com/ops/runbooks.git"),
    )
    branch = models.CharField(verbose_name=_("branch"), max_length=200, default="main")
    path = models.CharField(
        verbose_name=_("path"),
        max_length=300,
        blank=True,
        help_text=_("Folder inside the repository; blank for all."),
    )
    auth = models.CharField(
        verbose_name=_("authentication"), max_length=10, choices=Auth.choices, default=Auth.NONE
    )
    token = EncryptedTextField(
        verbose_name=_("token"),
        blank=True,
        help_text=_("A read-only access token. Encrypted, never shown again."),
    )
    ssh_private_key = EncryptedTextField(
        verbose_name=_("SSH private key"),
        blank=True,
        help_text=_("A read-only deploy key (OpenSSH format). Encrypted, never shown again."),
    )
    ssh_known_hosts = models.TextField(
        verbose_name=_("SSH known hosts"),
        blank=True,
        help_text=_("The server's host key line(s); required for SSH."),
    )
    enabled = models.BooleanField(verbose_name=_("enabled"), default=True)
    interval_minutes = models.PositiveIntegerField(
        verbose_name=_("sync every (minutes)"),
        default=15,
        help_text=_("How often it is pulled; 0 for on demand only."),
    )
    last_synced_at = models.DateTimeField(
        verbose_name=_("last synced at"), null=True, blank=True, editable=False
    )
    last_commit = models.CharField(verbose_name=_("last commit"), max_length=64, blank=True, editable=False)
    last_error = models.CharField(verbose_name=_("last error"), max_length=500, blank=True, editable=False)
    last_report = models.JSONField(verbose_name=_("last report"), default=dict, blank=True, editable=False)
    sync_claimed_until = models.DateTimeField(null=True, blank=True, editable=False)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("vault repository")
        verbose_name_plural = _("vault repositories")
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="vault_repository_org_name_uniq")
        ]
        indexes = [models.Index(fields=["enabled", "last_synced_at"], name="vault_repository_due_idx")]

    def __str__(self) -> str:
        return self.name


class KnowledgeDocument(TenantModel):
    """A runbook or reference text the specialists retrieve from (`query_knowledge`).

    `content_hash` identifies what was saved, `indexed_hash` what the passages were built from:
    when they agree the document is searchable as is, and re-ingesting the same text is a no-op.
    """

    class Source(models.TextChoices):
        VAULT = "vault", _("Vault runbook")
        UPLOAD = "upload", _("Upload")
        REPOSITORY = "repository", _("Git repository")
        PAST_INCIDENT = "past-incident", _("Past incident")

    title = models.CharField(verbose_name=_("title"), max_length=300)
    source_kind = models.CharField(
        verbose_name=_("source kind"), max_length=20, choices=Source.choices, default=Source.UPLOAD
    )
    source = models.CharField(
        verbose_name=_("source"),
        max_length=500,
        help_text=_("Path inside the vault, or the uploaded file's name."),
    )
    content = models.TextField(verbose_name=_("content"), help_text=_("Markdown or plain text."))
    language = models.CharField(
        verbose_name=_("language"),
        max_length=16,
        blank=True,
        editable=False,
        help_text=_("Detected when indexed."),
    )
    url = models.CharField(
        verbose_name=_("link"),
        max_length=1000,
        blank=True,
        help_text=_("Where the document lives, when it has a page."),
    )
    repository = models.ForeignKey(
        VaultRepository,
        verbose_name=_("repository"),
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="documents",
        editable=False,
    )
    incident = models.ForeignKey(
        "ops_app.Incident",
        verbose_name=_("incident"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        editable=False,
    )
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
            models.Index(fields=["organization", "source_kind"], name="knowledge_doc_org_kind_idx"),
            models.Index(fields=["incident"], name="knowledge_doc_incident_idx"),
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
    # Semantic search (docs/knowledge.md): the passage's unit vector as little-endian float32, the
    # embedding model that made it, and the hash of the text it was made from, so only passages
    # whose text or model changed are embedded again.
    embedding = models.BinaryField(null=True, blank=True, editable=False)
    embedding_model = models.CharField(max_length=200, blank=True, editable=False)
    embedding_hash = models.CharField(max_length=64, blank=True, editable=False)

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
