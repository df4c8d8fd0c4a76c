from django.conf import settings
from django.db import models

from ops_app import roles


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
