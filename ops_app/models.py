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
