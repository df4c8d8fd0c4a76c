from django.conf import settings
from django.db import models

from ops_app import roles
from ops_app.tenancy import TenantModel


class Organization(models.Model):
    """A tenant. Every estate, session and audit row belongs to exactly one."""

    name = models.CharField(max_length=200, unique=True)
    slug = models.SlugField(max_length=80, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """Ties a user to exactly one organization. The role is the user's group (see ops_app.roles)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="membership")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["organization"], name="membership_org_idx")]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organization}"

    @property
    def role(self) -> str | None:
        names = {group.name for group in self.user.groups.all()}  # prefetch-friendly
        for role in (roles.ORG_ADMIN, roles.AUDITOR, roles.MEMBER):
            if role in names:
                return role
        return None


class Device(TenantModel):
    """A host (or appliance) of the managed estate. Host tools reach it through `transport`."""

    class Kind(models.TextChoices):
        SERVER = "server", "Server"
        VM = "vm", "Virtual machine"
        CONTAINER = "container", "Container"
        DATABASE = "database", "Database"
        NETWORK = "network", "Network device"
        OTHER = "other", "Other"

    class Transport(models.TextChoices):
        LOCAL = "local", "Local (the Ongrid host itself)"
        SSH = "ssh", "SSH"

    class KnownHosts(models.TextChoices):
        STRICT = "strict", "Strict: the host key must be in the known-hosts text"
        ACCEPT_NEW = "accept-new", "Trust on first use"
        IGNORE = "ignore", "Do not check (lab use only)"

    name = models.CharField(max_length=200)
    address = models.CharField(max_length=255, blank=True, help_text="Host name or IP address.")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.SERVER)
    labels = models.JSONField(default=dict, blank=True)
    transport = models.CharField(max_length=10, choices=Transport.choices, default=Transport.SSH)
    ssh_port = models.PositiveIntegerField(default=22)
    ssh_username = models.CharField(max_length=100, blank=True)
    ssh_private_key = models.TextField(blank=True, help_text="PEM/OpenSSH private key; never logged.")
    ssh_password = models.CharField(max_length=255, blank=True, help_text="Used when no key is set.")
    ssh_known_hosts = models.TextField(blank=True, help_text="known_hosts lines for the strict policy.")
    ssh_host_key_policy = models.CharField(
        max_length=20, choices=KnownHosts.choices, default=KnownHosts.STRICT
    )
    online = models.BooleanField(default=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="device_org_name_uniq")]

    def __str__(self) -> str:
        return self.name


class KnowledgeDocument(TenantModel):
    """A runbook or reference text the specialists retrieve from (`query_knowledge`).

    `content_hash` identifies what was saved, `indexed_hash` what the passages were built from:
    when they agree the document is searchable as is, and re-ingesting the same text is a no-op.
    """

    class Source(models.TextChoices):
        VAULT = "vault", "Vault runbook"
        UPLOAD = "upload", "Upload"

    title = models.CharField(max_length=300)
    source_kind = models.CharField(max_length=10, choices=Source.choices, default=Source.UPLOAD)
    source = models.CharField(max_length=500, help_text="Path inside the vault, or the uploaded file's name.")
    content = models.TextField(help_text="Markdown or plain text.")
    content_hash = models.CharField(max_length=64, editable=False)
    indexed_hash = models.CharField(max_length=64, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
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
        ordering = ["document", "position"]
        constraints = [
            models.UniqueConstraint(fields=["document", "position"], name="knowledge_passage_position_uniq")
        ]
        indexes = [models.Index(fields=["organization"], name="knowledge_passage_org_idx")]

    def __str__(self) -> str:
        return f"{self.document_id}#{self.position} {self.heading}"
