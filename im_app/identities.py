"""Who is talking: a platform sender mapped to an Ongrid user of the app's organization.

The only writer of `IMIdentity`. A sender the app does not allow is refused before anything else;
an allowed sender without a linked user gets a one-time code (stored hashed, valid 30 minutes)
that the user confirms once from the web, signed in (`/im/link/<code>/`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.urls import reverse
from django.utils import timezone

from im_app.models import IMApp, IMIdentity
from ops_app.core.encryption import new_token, token_digest
from ops_app.tenancy.scoping import organization_of

log = logging.getLogger(__name__)

CODE_LIFETIME = timedelta(minutes=30)


@dataclass(frozen=True)
class Sender:
    external_id: str  # the platform's user id
    display_name: str = ""
    chat_id: str = ""  # the chat / channel the message came from


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    user: AbstractBaseUser | None = None
    link_url: str = ""


def public_url(path: str) -> str:
    return settings.CONFIG.public_url.rstrip("/") + path


def resolve(app: IMApp, sender: Sender) -> Verdict:
    """Allowed? Linked to whom? An allowed but unlinked sender gets a fresh link URL."""
    allowed = app.allowed()
    if allowed and sender.external_id not in allowed and sender.chat_id not in allowed:
        log.warning("IM app %s: ignored a message from %s (not in allow_from)", app.pk, sender.external_id)
        return Verdict(allowed=False)
    identity = (
        IMIdentity.objects.select_related("user__membership")
        .filter(app=app, external_id=sender.external_id)
        .first()
    )
    user = identity.user if identity is not None else None
    if user is not None and user.is_active and _same_tenant(app, user):
        return Verdict(allowed=True, user=user)
    return Verdict(allowed=True, link_url=issue_link_code(app, sender))


def _same_tenant(app: IMApp, user) -> bool:
    organization = organization_of(user)
    return organization is not None and organization.pk == app.organization_id


def issue_link_code(app: IMApp, sender: Sender) -> str:
    """A new one-time code for this sender (the previous one stops working); its link URL."""
    code = new_token("iml_")
    IMIdentity.objects.update_or_create(
        app=app,
        external_id=sender.external_id,
        defaults={
            "organization_id": app.organization_id,
            "display_name": sender.display_name[:200],
            "code_digest": token_digest(code),
            "code_expires_at": timezone.now() + CODE_LIFETIME,
        },
    )
    return public_url(reverse("im-link", args=[code]))


def pending_identity(code: str, user) -> IMIdentity | None:
    """The identity a code would link, if the code is current and from `user`'s organization."""
    organization = organization_of(user)
    if organization is None or not code:
        return None
    return (
        IMIdentity.objects.select_related("app")
        .filter(
            code_digest=token_digest(code),
            code_expires_at__gt=timezone.now(),
            organization=organization,
            app__organization=organization,
        )
        .first()
    )


def confirm_link(code: str, user) -> IMIdentity | None:
    """Link the code's sender to `user` (the code is spent). None if the code is not theirs to use."""
    identity = pending_identity(code, user)
    if identity is None:
        return None
    identity.user = user
    identity.linked_at = timezone.now()
    identity.code_digest = ""
    identity.code_expires_at = None
    identity.save(update_fields=["user", "linked_at", "code_digest", "code_expires_at"])
    log.info("IM app %s: sender %s linked to user %s", identity.app_id, identity.external_id, user.pk)
    return identity


def linked_user(app: IMApp, external_id: str):
    """The Ongrid user behind a platform user id (for button presses), or None."""
    identity = IMIdentity.objects.select_related("user").filter(app=app, external_id=external_id).first()
    if identity is None or identity.user is None or not identity.user.is_active:
        return None
    return identity.user if _same_tenant(app, identity.user) else None


def link_by_email(app: IMApp, sender: Sender, email: str):
    """The org-level mapping: a platform profile's e-mail that is an active user's of the app's
    organization links the sender at once (Slack, with the users:read.email scope)."""
    if not email:
        return None
    user = (
        get_user_model()
        .objects.filter(email__iexact=email, is_active=True, membership__organization_id=app.organization_id)
        .first()
    )
    if user is None:
        return None
    IMIdentity.objects.update_or_create(
        app=app,
        external_id=sender.external_id,
        defaults={
            "organization_id": app.organization_id,
            "display_name": sender.display_name[:200],
            "user": user,
            "linked_at": timezone.now(),
            "code_digest": "",
            "code_expires_at": None,
        },
    )
    return user
