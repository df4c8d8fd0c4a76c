"""Automatic change recording: every create / change / delete of a tracked model writes one
ChangeEvent row in the same transaction, so a rolled-back edit leaves no phantom event.

Tracked: devices, alert rules, topology nodes and edges, Alertmanager receivers, data sources and, when the
agents app defines them, its user agents, user skills, packs and trusted pack keys. The actor is
whoever `acting_as()` names; the `ChangeActorMiddleware` names the request's user for every
request (the admin included), so an edit through any view is attributed without each view
remembering to do it.

Secrets (every encrypted field, SSH keys and passwords, token hashes, anything whose field name
says so) never enter a diff: only the fact that such a field changed is kept, by name.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import decimal
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

from asgiref.sync import iscoroutinefunction
from django.apps import apps
from django.db import models
from django.db.models.signals import post_delete, post_save, pre_save
from django.utils import timezone
from django.utils.decorators import sync_and_async_middleware

from ops_app.core.encryption import EncryptedTextField
from ops_app.models import ChangeEvent

log = logging.getLogger(__name__)

SECRET_MARKERS = ("password", "secret", "token", "private_key", "api_key", "passphrase", "credential")
# Bookkeeping that changes on its own (heartbeats, timestamps): not a change anyone made.
VOLATILE_FIELDS = {"created_at", "updated_at", "last_seen_at", "online", "last_delivery_at"}


@dataclass(frozen=True)
class Actor:
    user_id: int | None
    name: str


_actor: contextvars.ContextVar[Actor | _RequestActor | None] = contextvars.ContextVar(
    "ongrid_change_actor", default=None
)
_suppressed: contextvars.ContextVar[bool] = contextvars.ContextVar("ongrid_change_suppressed", default=False)

# "app_label.ModelName" -> resource type recorded in ChangeEvent.resource_type
TRACKED_MODELS = {
    "ops_app.Device": "device",
    "ops_app.AlertRule": "alert_rule",
    "ops_app.TopologyNode": "topology_node",
    "ops_app.TopologyEdge": "topology_edge",
    "ops_app.AlertmanagerReceiver": "alertmanager_receiver",
    "ops_app.DataSource": "data_source",
    "ops_app.LLMEndpoint": "llm_endpoint",
    "ops_app.McpServer": "mcp_server",
    "ops_app.McpTool": "mcp_tool",
    "agents_app.UserAgent": "user_agent",
    "agents_app.UserSkill": "user_skill",
    "agents_app.Pack": "pack",
    "agents_app.TrustedPackKey": "trusted_pack_key",
}


def is_secret_field(name: str) -> bool:
    lowered = name.lower()
    return any(marker in lowered for marker in SECRET_MARKERS)


def _is_secret(field: models.Field) -> bool:
    return isinstance(field, EncryptedTextField) or is_secret_field(field.name)


@contextlib.contextmanager
def acting_as(user=None, name: str | None = None) -> Iterator[None]:
    """Attribute changes made inside the block to `user` (or to a named system actor)."""
    if user is not None and getattr(user, "is_authenticated", False):
        actor = Actor(user.pk, name or user.get_username())
    else:
        actor = Actor(None, name or "system")
    token = _actor.set(actor)
    try:
        yield
    finally:
        _actor.reset(token)


@contextlib.contextmanager
def suppressed() -> Iterator[None]:
    """Record nothing inside the block (bulk loads such as the demo estate or an evaluation's
    estate write curated history). Automatic reactions to estate writes (investigations) check
    `is_suppressed()` too, so a curated load never starts work of its own."""
    token = _suppressed.set(True)
    try:
        yield
    finally:
        _suppressed.reset(token)


def is_suppressed() -> bool:
    return _suppressed.get()


@sync_and_async_middleware
def ChangeActorMiddleware(get_response):  # noqa: N802 - Django middleware factory naming
    """Name the request's user as the actor of every change made while serving the request."""
    if iscoroutinefunction(get_response):

        async def middleware(request):
            token = _actor.set(_RequestActor(request))
            try:
                return await get_response(request)
            finally:
                _actor.reset(token)

    else:

        def middleware(request):
            token = _actor.set(_RequestActor(request))
            try:
                return get_response(request)
            finally:
                _actor.reset(token)

    return middleware


class _RequestActor:
    """Resolves request.user only when a change is actually recorded (most requests change nothing)."""

    def __init__(self, request) -> None:
        self.request = request

    def resolve(self) -> Actor:
        user = getattr(self.request, "user", None)
        if user is not None and user.is_authenticated:
            return Actor(user.pk, user.get_username())
        return Actor(None, "anonymous")


def current_actor() -> Actor:
    actor = _actor.get()
    if isinstance(actor, _RequestActor):
        return actor.resolve()
    return actor or Actor(None, "system")


def snapshot(instance: models.Model) -> dict:
    """The recordable state of a row: concrete fields minus secrets and volatile bookkeeping."""
    state = {}
    for field in instance._meta.concrete_fields:
        if field.primary_key or field.name in VOLATILE_FIELDS or _is_secret(field):
            continue
        state[field.name] = _plain(field.value_from_object(instance))
    return state


def secret_fields(instance: models.Model) -> dict:
    return {f.name: f.value_from_object(instance) for f in instance._meta.concrete_fields if _is_secret(f)}


def _plain(value):
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID):
        return str(value)
    return value


def _on_pre_save(sender, instance, raw=False, **kwargs) -> None:
    if raw or _suppressed.get() or instance.pk is None:
        return
    previous = sender._base_manager.filter(pk=instance.pk).first()
    if previous is not None:
        instance._ongrid_before = (snapshot(previous), secret_fields(previous))


def _on_post_save(sender, instance, created, raw=False, **kwargs) -> None:
    if raw or _suppressed.get():
        return
    before_state, before_secrets = getattr(instance, "_ongrid_before", (None, None))
    instance.__dict__.pop("_ongrid_before", None)
    after = snapshot(instance)
    if created or before_state is None:
        _record(sender, instance, "create", {}, after, [])
        return
    changed = sorted(k for k in after if before_state.get(k) != after[k])
    now_secrets = secret_fields(instance)
    secrets_changed = sorted(k for k in now_secrets if before_secrets.get(k) != now_secrets[k])
    if not changed and not secrets_changed:
        return
    _record(
        sender,
        instance,
        "update",
        {k: before_state.get(k) for k in changed},
        {k: after[k] for k in changed},
        secrets_changed,
    )


def _on_post_delete(sender, instance, **kwargs) -> None:
    if _suppressed.get():
        return
    _record(sender, instance, "delete", snapshot(instance), {}, [])


def _record(sender, instance, action: str, before: dict, after: dict, secrets_changed: list[str]) -> None:
    organization_id = getattr(instance, "organization_id", None)
    if organization_id is None:
        return  # not a tenant row: nowhere to record it
    resource_type = TRACKED_MODELS[sender._meta.label]
    actor = current_actor()
    name = str(instance)[:300]
    if secrets_changed:
        after = {**after, "_secrets_changed": secrets_changed}
    fields = [k for k in after if not k.startswith("_")] + secrets_changed
    verb = {"create": "created", "update": "changed", "delete": "deleted"}[action]
    summary = f"{actor.name} {verb} {resource_type.replace('_', ' ')} {name}"
    if action == "update":
        summary += ": " + ", ".join(fields)
    ChangeEvent.objects.create(
        organization_id=organization_id,
        occurred_at=timezone.now(),
        actor_id=actor.user_id,
        actor_name=actor.name,
        action=action,
        resource_type=resource_type,
        resource_id=str(instance.pk),
        resource_name=name,
        summary=summary[:500],
        before=before,
        after=after,
    )


def connect() -> list[str]:
    """Connect the recorder to every tracked model that exists; returns the labels connected."""
    connected = []
    for label in TRACKED_MODELS:
        try:
            model = apps.get_model(label)
        except LookupError:
            log.debug("change events: %s is not installed, not tracked", label)
            continue
        uid = f"ongrid-change-{label}"
        pre_save.connect(_on_pre_save, sender=model, dispatch_uid=uid + "-pre")
        post_save.connect(_on_post_save, sender=model, dispatch_uid=uid + "-post")
        post_delete.connect(_on_post_delete, sender=model, dispatch_uid=uid + "-del")
        connected.append(label)
    return connected
