from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils.translation import gettext_lazy as _

from agents_app.personas.schema import (
    KNOWN_KEYS,
    MAX_TOOL_CALLS_LIMIT,
    MAX_TURNS_LIMIT,
    NAME_MAX_LENGTH,
    PERMISSION_MODES,
    Persona,
    Skill,
    persona_from_mapping,
)
from ops_app.core.turn_memo import remembered
from ops_app.models.tenancy import TenantModel


class AuthoredInOrganization(TenantModel):
    """What an organization's people write themselves (user agents, user skills): who wrote it
    and when, the history their admin pages show."""

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("created by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        abstract = True


class UserAgent(AuthoredInOrganization):
    """A persona written in the admin by an organization (the top layer of the registry, docs/personas.md).

    Every persona key is a column so the admin can validate each one as a field; `extra` keeps
    unknown keys of an imported file so that import and "view as .md" round-trip.
    """

    PERMISSION_MODE_CHOICES = [(mode, mode) for mode in PERMISSION_MODES]

    name = models.CharField(
        verbose_name=_("name"),
        max_length=NAME_MAX_LENGTH,
        help_text=_("Lowercase kebab-case, e.g. specialist-postgres. This is the subagent_type."),
    )
    description = models.CharField(
        verbose_name=_("description"), max_length=500, help_text=_("One line: what this agent is for.")
    )
    when_to_use = models.TextField(
        verbose_name=_("when to use"),
        help_text=_("When the coordinator should dispatch to it; the first line shows in the catalog."),
    )
    body = models.TextField(verbose_name=_("body"), blank=True, help_text=_("The system prompt (Markdown)."))
    tools = models.JSONField(
        verbose_name=_("tools"),
        null=True,
        blank=True,
        help_text=_("Whitelist of tool names or * patterns; empty = the coordinator's read-only set."),
    )
    disallowed_tools = models.JSONField(
        verbose_name=_("disallowed tools"),
        default=list,
        blank=True,
        help_text=_("Blacklist; beats the whitelist."),
    )
    permission_mode = models.CharField(
        verbose_name=_("permission mode"), max_length=32, choices=PERMISSION_MODE_CHOICES, default="read-only"
    )
    max_turns = models.PositiveSmallIntegerField(
        verbose_name=_("max. turns"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_TURNS_LIMIT)],
        help_text=_("LLM steps before it must answer; empty = 15 (12 for the coordinator, default)."),
    )
    max_tool_calls = models.PositiveSmallIntegerField(
        verbose_name=_("max. tool calls"),
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_TOOL_CALLS_LIMIT)],
        help_text=_("Tool-call budget; empty = none."),
    )
    model = models.CharField(
        verbose_name=_("model"), max_length=200, blank=True, help_text=_("LLM model; empty = ONGRID_MODEL.")
    )
    critical_reminder = models.TextField(
        verbose_name=_("critical reminder"), blank=True, help_text=_("Re-injected every turn.")
    )
    skills = models.JSONField(
        verbose_name=_("skills"), default=list, blank=True, help_text=_("Names of skills to activate.")
    )
    extra = models.JSONField(
        verbose_name=_("extra"), default=dict, blank=True, help_text=_("Unknown front-matter keys, kept.")
    )
    enabled = models.BooleanField(
        verbose_name=_("enabled"), default=True, help_text=_("Disabled agents are not in the registry.")
    )
    pack = models.ForeignKey(
        "agents_app.Pack",
        verbose_name=_("pack"),
        null=True,
        blank=True,
        editable=False,
        on_delete=models.CASCADE,
        related_name="%(class)ss",
        help_text=_("The pack that installed it; uninstalling the pack removes it."),
    )

    class Meta:
        verbose_name = _("user agent")
        verbose_name_plural = _("user agents")
        db_table = "user_agents"
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="user_agent_org_name_uniq")
        ]
        indexes = [
            models.Index(fields=["organization", "enabled", "name"], name="user_agent_org_enabled_idx")
        ]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def from_db(cls, db, field_names, values):
        instance = super().from_db(db, field_names, values)
        # The name the registry knows this row by, so a rename can remove the old entry.
        instance._loaded_name = instance.name if "name" in field_names else None
        return instance

    def front_matter(self) -> dict:
        """The row's front-matter keys (the persona schema's `KNOWN_KEYS`), then its unknown keys."""
        meta = {key: getattr(self, key) for key in KNOWN_KEYS}
        meta["disallowed_tools"] = meta["disallowed_tools"] or []
        meta["skills"] = meta["skills"] or []
        meta["model"] = meta["model"] or None
        # Unknown keys only: a known key smuggled into `extra` must not override its own column.
        meta.update({key: value for key, value in (self.extra or {}).items() if key not in meta})
        return meta

    def to_persona(self) -> Persona:
        """The row as a registry persona; raises PersonaError if a field is unusable."""
        return persona_from_mapping(self.front_matter(), self.body.strip(), source="user", path=None)


class UserSkill(AuthoredInOrganization):
    """A skill written in the admin by an organization (docs/skills.md): offered only to its agents.

    The same fields as a `SKILL.md` folder: front-matter keys as columns, the body, and the
    folder's other files as {filename: text}. Writes bump the organization's `RegistryVersion`, so
    every process offers the edited skill from its next agent run.
    """

    name = models.CharField(
        verbose_name=_("name"),
        max_length=NAME_MAX_LENGTH,
        help_text=_("Lowercase kebab-case, e.g. postgres-vacuum. The name the Skill tool loads."),
    )
    description = models.CharField(
        verbose_name=_("description"),
        max_length=500,
        help_text=_("One line the agents see in their skill catalog: what it is for."),
    )
    when_to_use = models.TextField(
        verbose_name=_("when to use"), blank=True, help_text=_("When an agent should load it.")
    )
    body = models.TextField(verbose_name=_("body"), help_text=_("The instructions (Markdown)."))
    files = models.JSONField(
        verbose_name=_("extra files"),
        default=dict,
        blank=True,
        help_text=_('Other files the body refers to, as {"filename": "text"}; read with the Skill tool.'),
    )
    always = models.BooleanField(
        verbose_name=_("always active"),
        default=False,
        help_text=_("Its body is in every agent's system prompt instead of the catalog."),
    )
    enabled = models.BooleanField(
        verbose_name=_("enabled"), default=True, help_text=_("Disabled skills are offered to no agent.")
    )
    pack = models.ForeignKey(
        "agents_app.Pack",
        verbose_name=_("pack"),
        null=True,
        blank=True,
        editable=False,
        on_delete=models.CASCADE,
        related_name="%(class)ss",
        help_text=_("The pack that installed it; uninstalling the pack removes it."),
    )

    class Meta:
        verbose_name = _("user skill")
        verbose_name_plural = _("user skills")
        db_table = "user_skills"
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "name"], name="user_skill_org_name_uniq")
        ]
        indexes = [
            models.Index(fields=["organization", "enabled", "name"], name="user_skill_org_enabled_idx")
        ]

    def __str__(self) -> str:
        return self.name

    def to_skill(self) -> Skill:
        """The row as a registry skill (source "user")."""
        return Skill(
            name=self.name,
            description=self.description.strip(),
            body=self.body.strip(),
            source="user",
            when_to_use=(self.when_to_use or "").strip(),
            always=self.always,
            files=dict(self.files or {}),
        )


class TrustedPackKey(TenantModel):
    """An ed25519 public key (minisign format) whose signatures the organization accepts on packs
    (docs/packs.md). The key id is read from the key itself."""

    name = models.CharField(verbose_name=_("name"), max_length=100, help_text=_("Who signs with it."))
    public_key = models.TextField(
        verbose_name=_("public key"),
        help_text=_("The minisign public key: the .pub file, or its second line (starts with RW)."),
    )
    key_id = models.CharField(verbose_name=_("key ID"), max_length=16, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("created by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("trusted pack key")
        verbose_name_plural = _("trusted pack keys")
        db_table = "agent_pack_trusted_keys"
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "key_id"], name="pack_key_org_id_uniq")
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.key_id})"


class PackOrigin(TenantModel):
    """Where a pack (or one release of it) came from and who signed it: the pack shows it, each
    release keeps its own so an upgrade from another source or signer stays traceable."""

    class SourceKind(models.TextChoices):
        FILE = "file", _("uploaded file")
        GIT = "git", _("Git repository")
        CATALOG = "catalog", _("catalog")

    name = models.CharField(verbose_name=_("name"), max_length=NAME_MAX_LENGTH)
    version = models.CharField(verbose_name=_("version"), max_length=50)
    source_kind = models.CharField(verbose_name=_("source"), max_length=10, choices=SourceKind.choices)
    source_url = models.CharField(verbose_name=_("source URL"), max_length=500, blank=True)
    source_ref = models.CharField(verbose_name=_("Git ref"), max_length=200, blank=True)
    source_path = models.CharField(verbose_name=_("path in the repository"), max_length=300, blank=True)
    signed_by = models.CharField(
        verbose_name=_("signed by"), max_length=150, blank=True, help_text=_("Blank: installed unsigned.")
    )

    class Meta:
        abstract = True


class Pack(PackOrigin):
    """A pack installed in an organization (docs/packs.md): what its current release put in the
    registry (user agents and skills linked by `pack`, MCP servers by name) and where it came from."""

    description = models.CharField(verbose_name=_("description"), max_length=500, blank=True)
    author = models.CharField(verbose_name=_("author"), max_length=200, blank=True)
    mcp_servers = models.JSONField(
        verbose_name=_("MCP servers"), default=list, blank=True, help_text=_("Names of the servers it added.")
    )
    installed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("installed by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    installed_at = models.DateTimeField(verbose_name=_("installed at"), auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name=_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("pack")
        verbose_name_plural = _("packs")
        db_table = "agent_packs"
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["organization", "name"], name="pack_org_name_uniq")]

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


class PackRelease(PackOrigin):
    """One version of a pack as it was fetched: the archive kept so that a rollback reinstalls
    exactly it. `staged` = previewed, not installed yet; `installed` = the pack's current release;
    `superseded` = an earlier installed one (the rollback target is the newest of those)."""

    class Status(models.TextChoices):
        STAGED = "staged", _("previewed")
        INSTALLED = "installed", _("installed")
        SUPERSEDED = "superseded", _("superseded")

    pack = models.ForeignKey(
        Pack, verbose_name=_("pack"), null=True, blank=True, on_delete=models.CASCADE, related_name="releases"
    )
    status = models.CharField(verbose_name=_("status"), max_length=12, choices=Status.choices)
    manifest = models.JSONField(verbose_name=_("manifest"), default=dict)
    archive = models.BinaryField(verbose_name=_("archive"))
    sha256 = models.CharField(verbose_name=_("SHA-256"), max_length=64)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("fetched by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(verbose_name=_("fetched at"), auto_now_add=True)
    installed_at = models.DateTimeField(verbose_name=_("installed at"), null=True, blank=True)

    class Meta:
        verbose_name = _("pack release")
        verbose_name_plural = _("pack releases")
        db_table = "agent_pack_releases"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "name", "status"], name="pack_release_org_name_idx"),
            models.Index(fields=["pack", "status", "-installed_at"], name="pack_release_pack_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version} ({self.status})"


class RegistryVersion(TenantModel):
    """A counter bumped with every user-agent write of an organization.

    Processes compare it with the version their cached overlay was built at (see
    agents_app.personas.registry): one primary-key read per spawn instead of a broadcast that can be missed.
    """

    version = models.PositiveBigIntegerField(default=0)

    class Meta:
        verbose_name = _("registry version")
        verbose_name_plural = _("registry versions")
        db_table = "agent_registry_versions"
        constraints = [models.UniqueConstraint(fields=["organization"], name="registry_version_org_uniq")]

    def __str__(self) -> str:
        return f"{self.organization_id}@{self.version}"

    @classmethod
    def _of(cls, organization_id: int) -> models.QuerySet:
        return cls.objects.filter(organization_id=organization_id).values_list("version", flat=True)

    @classmethod
    def current(cls, organization_id: int) -> int:
        return cls._of(organization_id).first() or 0

    @classmethod
    async def acurrent(cls, organization_id: int) -> int:
        """Read once per turn (ops_app.core.turn_memo): a worker's spawn asks again otherwise."""

        async def load() -> int:
            return await cls._of(organization_id).afirst() or 0

        return await remembered(("registry_version", organization_id), load)

    @classmethod
    def bump(cls, organization_id: int) -> None:
        """Increment inside the caller's transaction (it commits or rolls back with the edit)."""
        if cls.objects.filter(organization_id=organization_id).update(version=models.F("version") + 1):
            return
        _, created = cls.objects.get_or_create(organization_id=organization_id, defaults={"version": 1})
        if not created:  # another writer created it between our update and insert
            cls.objects.filter(organization_id=organization_id).update(version=models.F("version") + 1)


class MutatingProposal(TenantModel):
    """One write/destructive tool call held by the review gate (docs/review-gate.md), and what became of it.

    The row is written before the reviewer runs, so an approval card, the admin and the session
    tree can show a change that is still being reviewed. `decision` is the final word; the
    reviewer's and the human's verdicts are kept apart so the audit shows who said what.
    """

    class Decision(models.TextChoices):
        PENDING = "pending", _("Pending")
        APPROVE = "approve", _("Approved")
        REJECT = "reject", _("Rejected")

    class BlastRadius(models.TextChoices):
        SINGLE_DEVICE = "single_device", _("Single device")
        # One workload's pods in one namespace of a Kubernetes cluster (docs/kubernetes.md).
        NAMESPACE = "namespace", _("Namespace")
        CLUSTER = "cluster", _("Cluster")
        TENANT_WIDE = "tenant_wide", _("Tenant-wide")

    session = models.ForeignKey(
        "chat_app.ChatSession", verbose_name=_("session"), on_delete=models.CASCADE, related_name="proposals"
    )
    # The chat the change belongs to (the session itself for a coordinator): where the card shows.
    root_session = models.ForeignKey(
        "chat_app.ChatSession", verbose_name=_("root session"), on_delete=models.CASCADE, related_name="+"
    )
    tool_call_id = models.CharField(verbose_name=_("tool call ID"), max_length=200, blank=True)
    tool = models.CharField(verbose_name=_("tool"), max_length=200)
    tool_class = models.CharField(verbose_name=_("tool class"), max_length=20)
    persona = models.CharField(verbose_name=_("persona"), max_length=100)
    permission_mode = models.CharField(verbose_name=_("permission mode"), max_length=32)
    arguments = models.JSONField(
        verbose_name=_("arguments"), default=dict, blank=True, help_text=_("Secrets redacted.")
    )
    payload = models.JSONField(
        verbose_name=_("payload"),
        default=dict,
        help_text=_("{action, target, reason, blast_radius, operator, context_summary}"),
    )
    target = models.CharField(
        verbose_name=_("target"),
        max_length=300,
        blank=True,
        help_text=_("Copied from the payload, for lookups."),
    )
    reviewer_session = models.ForeignKey(
        "chat_app.ChatSession",
        verbose_name=_("reviewer session"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    reviewer_decision = models.CharField(
        verbose_name=_("reviewer decision"), max_length=10, choices=Decision.choices, default=Decision.PENDING
    )
    reviewer_reason = models.TextField(verbose_name=_("reviewer reason"), blank=True)
    requires_human = models.BooleanField(verbose_name=_("requires human"), default=False)
    human_decision = models.CharField(
        verbose_name=_("human decision"), max_length=10, choices=Decision.choices, default=Decision.PENDING
    )
    human_approver = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("human approver"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    human_decided_at = models.DateTimeField(verbose_name=_("human decided at"), null=True, blank=True)
    decision = models.CharField(
        verbose_name=_("decision"), max_length=10, choices=Decision.choices, default=Decision.PENDING
    )
    decision_reason = models.TextField(verbose_name=_("decision reason"), blank=True)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    decided_at = models.DateTimeField(verbose_name=_("decided at"), null=True, blank=True)
    # What the approved call did when it ran: `executed_at` only for a run that succeeded,
    # `failed_at` and the (redacted, truncated) error for one that did not; `execution_status` is
    # the run's audit status (ok, error, timeout, killed). Neither is set for a call not run.
    executed_at = models.DateTimeField(verbose_name=_("executed at"), null=True, blank=True)
    failed_at = models.DateTimeField(verbose_name=_("failed at"), null=True, blank=True)
    execution_status = models.CharField(verbose_name=_("execution status"), max_length=20, blank=True)
    execution_error = models.TextField(verbose_name=_("execution error"), blank=True)

    class Meta:
        verbose_name = _("mutating proposal")
        verbose_name_plural = _("mutating proposals")
        db_table = "mutating_proposals"
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["organization", "-created_at"], name="proposal_org_created_idx"),
            models.Index(fields=["root_session", "created_at"], name="proposal_root_idx"),
            models.Index(fields=["session", "created_at"], name="proposal_session_idx"),
            models.Index(fields=["organization", "target", "-created_at"], name="proposal_org_target_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.tool} on {self.target or '?'} ({self.decision})"

    @property
    def awaiting_human(self) -> bool:
        return (
            self.requires_human
            and self.decision == self.Decision.PENDING
            and self.reviewer_decision == self.Decision.APPROVE
        )

    @property
    def outcome(self) -> str:
        """Where the change stands, in one word every surface shows: with_reviewer, awaiting_human,
        rejected, approved (not run yet), executed (ran and succeeded) or failed (ran and failed)."""
        if self.decision == self.Decision.REJECT:
            return "rejected"
        if self.decision == self.Decision.PENDING:
            return "awaiting_human" if self.awaiting_human else "with_reviewer"
        if self.executed_at is not None:
            return "executed"
        return "failed" if self.failed_at is not None else "approved"


class RequestedCall(TenantModel):
    """A write a person sent through the review gate with one click (a report's next action, an
    incident's Acknowledge / Resolve): the next turn of `session` runs exactly this call, as the
    `persona` worker that owns the tool, instead of asking the coordinator's model
    (docs/review-gate.md, "One-click changes")."""

    CALL_ID_PREFIX = "requested_"  # the tool call id of the call it becomes: requested_<pk>

    session = models.ForeignKey(
        "chat_app.ChatSession",
        verbose_name=_("session"),
        on_delete=models.CASCADE,
        related_name="requested_calls",
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("requested by"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    persona = models.CharField(verbose_name=_("persona"), max_length=100)
    tool = models.CharField(verbose_name=_("tool"), max_length=200)
    arguments = models.JSONField(verbose_name=_("arguments"), default=dict, blank=True)
    description = models.CharField(verbose_name=_("description"), max_length=500)
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    taken_at = models.DateTimeField(verbose_name=_("taken at"), null=True, blank=True)

    class Meta:
        db_table = "requested_calls"
        verbose_name = _("one-click change")
        verbose_name_plural = _("one-click changes")
        indexes = [models.Index(fields=["session", "taken_at"], name="requested_call_session_idx")]

    def __str__(self) -> str:
        return f"{self.tool} requested in session {self.session_id}"
