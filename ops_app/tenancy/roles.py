"""Roles are Django groups. The groups are created by a data migration; the permissions they
carry are (re)synchronised after every migrate, because models added by later features bring
their own permissions that a migration written today cannot name."""

from __future__ import annotations

import logging

from django.contrib.auth.models import Group, Permission

log = logging.getLogger(__name__)

MEMBER = "member"
AUDITOR = "auditor"
ORG_ADMIN = "org-admin"
ROLES = (MEMBER, AUDITOR, ORG_ADMIN)

# app_label -> codename prefixes ("view", "add", "change", "delete") each role gets on every
# model of that app. Object-level tenancy is enforced by TenantQuerySet, not here.
ROLE_GRANTS: dict[str, dict[str, tuple[str, ...]]] = {
    MEMBER: {"chat_app": ("view", "add", "change")},
    AUDITOR: {
        "chat_app": ("view",),
        "audit_app": ("view",),
        "agents_app": ("view",),
        "ops_app": ("view",),
        "incidents_app": ("view",),
        "schedules_app": ("view",),
    },
    ORG_ADMIN: {
        "chat_app": ("view", "add", "change"),
        "audit_app": ("view",),
        "agents_app": ("view", "add", "change", "delete"),
        "ops_app": ("view", "add", "change", "delete"),
        "incidents_app": ("view", "add", "change", "delete"),
        # The organization's IM apps (Slack, Telegram, Feishu bots) and linked senders.
        "im_app": ("view", "add", "change", "delete"),
        "schedules_app": ("view", "add", "change", "delete"),
        # Users of their own organization only (ops_app.admin.tenancy scopes the rows and forms).
        "auth": ("view", "add", "change", "delete"),
    },
}
# Models no role may edit, whatever ROLE_GRANTS says (the tenants themselves, memberships).
RESERVED_MODELS = {("ops_app", "organization"), ("ops_app", "membership")}
# Models no role may even see: groups and permissions are global, editing them is platform work.
HIDDEN_MODELS = {("auth", "group"), ("auth", "permission")}


def permissions_for(role: str) -> list[Permission]:
    grants = ROLE_GRANTS[role]
    perms = Permission.objects.filter(content_type__app_label__in=grants).select_related("content_type")
    chosen = []
    for perm in perms:
        action = perm.codename.split("_", 1)[0]
        key = (perm.content_type.app_label, perm.content_type.model)
        if key in HIDDEN_MODELS:
            continue
        if key in RESERVED_MODELS and action != "view":
            continue
        if action in grants[perm.content_type.app_label]:
            chosen.append(perm)
    return chosen


def role_group(role: str) -> Group:
    """The group of `role`, recreated with its permissions if something deleted it."""
    group, created = Group.objects.get_or_create(name=role)
    if created:
        group.permissions.set(permissions_for(role))
    return group


def sync_role_permissions(sender=None, **kwargs) -> None:
    """post_migrate hook: give each existing role group exactly its permissions."""
    for role in ROLES:
        group = Group.objects.filter(name=role).first()
        if group is None:
            continue
        group.permissions.set(permissions_for(role))
