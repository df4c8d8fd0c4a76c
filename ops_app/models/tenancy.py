"""The tenants and who belongs to them: organizations, memberships, API tokens, and the
`TenantModel` base every tenant-owned row inherits (its manager scopes rows to a tenant)."""

from __future__ import annotations

from typing import TYPE_CHECKING
from zoneinfo import available_timezones

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from ops_app.core.encryption import new_token, token_digest
from ops_app.tenancy import roles
from ops_app.tenancy.scoping import organization_of, sees_all_tenants

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser, AnonymousUser


class TenantQuerySet(models.QuerySet):
    """Every tenant-owned model's rows, scoped: no feature has to remember how tenancy is decided."""

    def for_organization(self, organization: Organization | int | None) -> TenantQuerySet:
        if organization is None:
            return self.none()
        return self.filter(organization=organization)

    def for_user(self, user: AbstractBaseUser | AnonymousUser | None) -> TenantQuerySet:
        """Rows the user may see: all for platform staff, their organization's otherwise."""
        if sees_all_tenants(user):
            return self.all()
        return self.for_organization(organization_of(user))


TenantManager = models.Manager.from_queryset(TenantQuerySet)


class TenantModel(models.Model):
    """The base of every tenant-owned row: its organization, and a manager that scopes by it."""

    organization = models.ForeignKey(
        "ops_app.Organization", verbose_name=_("organization"), on_delete=models.CASCADE, related_name="+"
    )

    objects = TenantManager()

    class Meta:
        abstract = True


class Organization(models.Model):
    """A tenant. Every estate, session and audit row belongs to exactly one."""

    name = models.CharField(verbose_name=_("name"), max_length=200, unique=True)
    slug = models.SlugField(verbose_name=_("slug"), max_length=80, unique=True)
    timezone = models.CharField(
        verbose_name=_("timezone"),
        max_length=64,
        default="UTC",
        help_text=_(
            "IANA zone the organization works in (e.g. Europe/Madrid): new schedules run on its clock."
        ),
    )
    allow_unsigned_packs = models.BooleanField(
        verbose_name=_("allow unsigned packs"),
        default=False,
        help_text=_("Packs without a signature from one of the trusted pack keys may be installed."),
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("organization")
        verbose_name_plural = _("organizations")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.timezone not in available_timezones():
            raise ValidationError(
                {"timezone": _("Unknown time zone %(zone)s.") % {"zone": repr(self.timezone)}}
            )


class Membership(models.Model):
    """Ties a user to exactly one organization. The role is the user's group (see ops_app.tenancy.roles)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="membership"
    )
    organization = models.ForeignKey(
        Organization, verbose_name=_("organization"), on_delete=models.CASCADE, related_name="memberships"
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), auto_now_add=True)
    timezone = models.CharField(
        verbose_name=_("timezone"),
        max_length=64,
        blank=True,
        help_text=_("IANA zone the pages show times in (e.g. Europe/Madrid); blank: the browser's own zone."),
    )
    language = models.CharField(
        verbose_name=_("language"),
        max_length=16,
        blank=True,
        help_text=_(
            "Language of the pages and the agents' replies (en, es, fr, zh-hans); blank: the browser's"
        ),
    )

    class Meta:
        verbose_name = _("membership")
        verbose_name_plural = _("memberships")
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


class ApiToken(models.Model):
    """A token for the REST API (`Authorization: Token <token>`). It authenticates its user, so it
    acts within that user's organization and role. Only the SHA-256 is stored: the token is shown
    once, when issued (`ApiToken.issue`, the admin, `manage.py ongrid_token`)."""

    TOKEN_PREFIX = "ogt_"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(
        verbose_name=_("name"), max_length=100, blank=True, help_text=_("What the token is for.")
    )
    key_hash = models.CharField(verbose_name=_("key hash"), max_length=64, unique=True, editable=False)
    hint = models.CharField(
        verbose_name=_("hint"), max_length=12, editable=False, help_text=_("The token's first characters.")
    )
    created_at = models.DateTimeField(verbose_name=_("created at"), default=timezone.now, editable=False)
    last_used_at = models.DateTimeField(verbose_name=_("last used at"), null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.hint}… ({self.name or self.user})"

    def issue_token(self) -> str:
        """Give this (unsaved) row a new token, kept on `self.token` until the instance is gone."""
        self.token = new_token(self.TOKEN_PREFIX)
        self.key_hash = token_digest(self.token)
        self.hint = self.token[:8]
        return self.token

    @classmethod
    def issue(cls, user, name: str = "") -> tuple[ApiToken, str]:
        """Create a token for `user`; returns the row and the token (the only time it exists)."""
        row = cls(user=user, name=name)
        token = row.issue_token()
        row.save()
        return row, token

    @classmethod
    def for_token(cls, token: str | None) -> ApiToken | None:
        if not token:
            return None
        return cls.objects.select_related("user").filter(key_hash=token_digest(token)).first()
