"""Who is talking: a platform sender mapped to an Ongrid user of the app's organization.

The only writer of `IMIdentity`. A sender the app does not allow is refused before anything else;
an allowed sender without a linked user gets a one-time code (stored hashed, valid 30 minutes)
that the user confirms once from the web, signed in (`/im/link/<code>/`).

What a platform says about a sender (Slack's profile e-mail) only *suggests* a user: the platform
API is wherever the app's admin pointed it, so its answers are the admin's word, not proof. The
suggestion becomes a link when that user confirms from the web or an org admin confirms it in the
admin. Nothing ever links a sender to platform staff (a superuser), whatever the path.
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
    if user is not None and may_link(app, user):
        return Verdict(allowed=True, user=user)
    return Verdict(allowed=True, link_url=issue_link_code(app, sender))


def may_link(app: IMApp, user) -> bool:
    """Whether a sender of `app` may act as `user`: an active user of the app's organization who
    is not platform staff (a superuser works across tenants; no chat account may borrow that)."""
    if user is None or not user.is_active or user.is_superuser:
        return False
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
    if organization is None or not code or user.is_superuser:
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
    if identity is None or not may_link(identity.app, user):
        return None
    _link(identity, user)
    return identity


def confirm_suggestion(identity: IMIdentity) -> bool:
    """An org admin's confirmation of the user the platform suggested. False (and nothing linked)
    when there is no suggestion or the suggested user may no longer be linked."""
    user = identity.suggested_user
    if user is None or not may_be_suggested(identity.app, user):
        return False
    _link(identity, user)
    return True


def _link(identity: IMIdentity, user) -> None:
    identity.user = user
    identity.suggested_user = None
    identity.linked_at = timezone.now()
    identity.code_digest = ""
    identity.code_expires_at = None
    identity.save(update_fields=["user", "suggested_user", "linked_at", "code_digest", "code_expires_at"])
    log.info("IM app %s: sender %s linked to user %s", identity.app_id, identity.external_id, user.pk)


def linked_user(app: IMApp, external_id: str):
    """The Ongrid user behind a platform user id (for button presses), or None."""
    identity = (
        IMIdentity.objects.select_related("user__membership").filter(app=app, external_id=external_id).first()
    )
    if identity is None or not may_link(app, identity.user):
        return None
    return identity.user


def may_be_suggested(app: IMApp, user) -> bool:
    """Who a platform's word may point at: a user who may be linked and has no admin-site access
    (platform staff, org admins), so a forged answer can never aim a sender at an administrator."""
    return may_link(app, user) and not user.is_staff


def suggest_by_email(app: IMApp, sender: Sender, email: str):
    """Note the user whose e-mail a platform profile gives (Slack, users:read.email) as the
    sender's suggested user; the sender stays unlinked until that is confirmed. The user, or None."""
    if not email:
        return None
    candidates = get_user_model().objects.filter(
        email__iexact=email,
        is_active=True,
        is_superuser=False,
        is_staff=False,
        membership__organization_id=app.organization_id,
    )
    found = list(candidates.select_related("membership")[:2])
    if len(found) != 1 or not may_be_suggested(app, found[0]):  # nobody, or an e-mail two users share
        return None
    user = found[0]
    IMIdentity.objects.update_or_create(
        app=app,
        external_id=sender.external_id,
        defaults={
            "organization_id": app.organization_id,
            "display_name": sender.display_name[:200],
            "suggested_user": user,
        },
    )
    return user
