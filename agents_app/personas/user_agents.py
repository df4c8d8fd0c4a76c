"""User agents: the organization-owned personas edited in the admin and the API.

Validation, the .md import/export pair and the registry notifications live here so that the
admin, the API and any future surface share one set of rules. Registry notifications hang off
model signals, so every path that saves or deletes a row (admin forms, admin bulk delete, the
API, a shell) bumps the organization's registry version and updates this process's registry.
"""

from __future__ import annotations

import json
import logging

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.utils.translation import gettext as _

from agents_app.models import RegistryVersion, UserAgent
from agents_app.personas import claude_code, registry
from agents_app.personas import skills as skill_sources
from agents_app.personas.schema import (
    COORDINATOR,
    KNOWN_KEYS,
    MAX_PERSONA_BYTES,
    NAME_MAX_LENGTH,
    NAME_RE,
    REVIEWER,
    STORED_FIELDS,
    Persona,
    PersonaError,
    parse_persona,
    persona_fields,
    persona_to_markdown,
)
from agents_app.toolsets import names as tool_names
from ops_app.tenancy import roles
from ops_app.tenancy.scoping import sees_all_tenants

log = logging.getLogger(__name__)

PERSONA_FIELDS = STORED_FIELDS


def may_override_coordinator(user) -> bool:
    """Only org admins (and platform staff) may replace their organization's coordinator."""
    if user is None or not user.is_authenticated:
        return False
    return sees_all_tenants(user) or user.groups.filter(name=roles.ORG_ADMIN).exists()


def is_org_admin(user) -> bool:
    return may_override_coordinator(user)


def stored_size(agent: UserAgent) -> int:
    """Bytes the agent's persona takes (its fields as JSON); capped like a persona file."""
    fields = {key: getattr(agent, key) for key in PERSONA_FIELDS}
    return len(json.dumps(fields, default=str, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def field_errors(agent: UserAgent, user=None) -> dict[str, list[str]]:
    """Every rule a user agent must pass, as messages per field (docs/personas.md)."""
    errors: dict[str, list[str]] = {}

    def add(name: str, message: str) -> None:
        errors.setdefault(name, []).append(message)

    size = stored_size(agent)
    if size > MAX_PERSONA_BYTES:
        add(
            "__all__",
            _("The agent is %(size)s bytes; the limit is %(limit)s bytes.")
            % {"size": size, "limit": MAX_PERSONA_BYTES},
        )
        return errors  # nothing else is worth checking on a value this size

    name = agent.name or ""
    if len(name) > NAME_MAX_LENGTH or not NAME_RE.match(name):
        add("name", _("Use lowercase letters, digits and single hyphens, like 'specialist-postgres'."))
    elif name == REVIEWER:
        add("name", _("'reviewer' is reserved: only the review gate runs the reviewer."))
    elif name == COORDINATOR and not may_override_coordinator(user):
        add("name", _("'default' is the coordinator; only an org admin may override it."))
    elif agent.organization_id and (
        UserAgent.objects.filter(organization_id=agent.organization_id, name=name)
        .exclude(pk=agent.pk)
        .exists()
    ):
        add("name", _("Your organization already has an agent named %(name)s.") % {"name": repr(name)})
    for key, allow_unmatched in (("tools", False), ("disallowed_tools", True)):
        value = getattr(agent, key)
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            add(key, _("Give a list of tool names."))
            continue
        unknown = tool_names.unknown_tools(value, allow_unmatched_patterns=allow_unmatched)
        if unknown:
            add(
                key,
                _("Unknown tool(s): %(unknown)s. Known tools: %(known)s.")
                % {"unknown": ", ".join(unknown), "known": ", ".join(sorted(tool_names.known_tools()))},
            )
    skills = agent.skills or []
    if not isinstance(skills, list) or not all(isinstance(item, str) for item in skills):
        add("skills", _("Give a list of skill names."))
    else:
        known = skill_sources.available_skills(agent.organization_id)  # files and the org's own
        missing = [skill for skill in skills if skill not in known]
        if missing:
            add("skills", _("Unknown skill(s): %(names)s.") % {"names": ", ".join(missing)})
    if not isinstance(agent.extra or {}, dict):
        add("extra", _("Must be a mapping of keys to values."))
    else:
        clashing = sorted(key for key in agent.extra or {} if key in KNOWN_KEYS or key in claude_code.ALIASES)
        if clashing:
            add("extra", _("These keys have their own fields: %(keys)s.") % {"keys": ", ".join(clashing)})
    if not errors:
        try:
            agent.to_persona()
        except PersonaError as exc:
            add("__all__", exc.message)
    return errors


def validate(agent: UserAgent, user=None) -> None:
    """Raise a Django ValidationError keyed by field when `agent` is not a usable persona."""
    errors = field_errors(agent, user)
    if errors:
        raise ValidationError(errors)


def to_markdown(agent: UserAgent) -> str:
    """The row as a persona file ("view as .md"); importing it gives the same row back."""
    return persona_to_markdown(agent.to_persona())


@transaction.atomic
def import_markdown(text: str, organization, user, *, overwrite: bool = False) -> UserAgent:
    """Create (or with `overwrite`, update) the user agent a persona file describes.

    Raises ValidationError with a human message for a malformed file or an invalid persona;
    nothing is written then. The returned row's `import_notes` (not stored: the row itself is the
    canonical reading) say how a Claude Code file was read, for the admin to show once.
    """
    try:
        persona = parse_persona(text, source="user", path=_("uploaded file"))
    except PersonaError as exc:
        raise ValidationError(str(exc)) from None
    agent = UserAgent.objects.filter(organization=organization, name=persona.name).first()
    if agent is not None and not overwrite:
        raise ValidationError(
            _("An agent named %(name)s already exists; tick 'replace existing' to overwrite it.")
            % {"name": repr(persona.name)}
        )
    if agent is None:
        agent = UserAgent(organization=organization, created_by=user if user and user.pk else None)
    for key, value in persona_fields(persona).items():
        setattr(agent, key, value)
    validate(agent, user)
    agent.save()
    agent.import_notes = list(persona.import_notes)
    return agent


def file_personas(organization_id: int | None) -> list[tuple[Persona, bool]]:
    """The built-in and mounted personas, each with whether `organization_id` overrides it with a
    user agent, so the admin can show what exists beside the organization's own rows."""
    overridden = set()
    if organization_id is not None:
        rows = UserAgent.objects.filter(organization_id=organization_id)
        overridden = set(rows.values_list("name", flat=True))
    return [(persona, persona.name in overridden) for persona in registry.file_registry().all()]


def override_of(persona: Persona, organization) -> UserAgent | None:
    """The organization's user agent that already overrides `persona` (same name), if any."""
    return UserAgent.objects.filter(organization=organization, name=persona.name).first()


def draft_from(persona: Persona) -> dict:
    """ "Copy to edit": the add form's initial values, prefilled from `persona` and enabled.

    Nothing is stored: because user agents shadow file personas of the same name
    (docs/personas.md), a stored copy would replace the persona from the next dispatch on, before
    the admin had edited or even looked at it. The override exists once the admin saves the
    form, through the same validation as any user agent (the reserved `reviewer`, unknown tools
    in a mounted file, `default` for someone who is not an org admin are refused there).
    """
    return {**persona_fields(persona), "enabled": True}


# ---------------------------------------------------------------------------------------------
# Registry notifications


def _apply_saved(organization_id: int, persona: Persona | None, old_name: str | None) -> None:
    live = registry.applied_in_process(organization_id)
    if live is None:
        return  # this process never built the overlay; the next get_registry reads the rows
    if old_name and (persona is None or old_name != persona.name):
        live.remove(old_name)
    if persona is not None:
        live.replace(persona)


def _on_saved(sender, instance: UserAgent, **kwargs) -> None:
    RegistryVersion.bump(instance.organization_id)
    old_name = getattr(instance, "_loaded_name", None)
    persona = None
    if instance.enabled:
        try:
            persona = instance.to_persona()
        except PersonaError:
            log.warning(
                "user agent %s (id %s) is not a valid persona; not in the registry", instance, instance.pk
            )
    if persona is None:
        old_name = old_name or instance.name
    instance._loaded_name = instance.name
    org = instance.organization_id
    transaction.on_commit(lambda: _apply_saved(org, persona, old_name))


def _on_deleted(sender, instance: UserAgent, **kwargs) -> None:
    RegistryVersion.bump(instance.organization_id)
    org, name = instance.organization_id, getattr(instance, "_loaded_name", None) or instance.name
    transaction.on_commit(lambda: _apply_saved(org, None, name))


def connect_signals() -> None:
    post_save.connect(_on_saved, sender=UserAgent, dispatch_uid="ongrid-user-agent-saved")
    post_delete.connect(_on_deleted, sender=UserAgent, dispatch_uid="ongrid-user-agent-deleted")
