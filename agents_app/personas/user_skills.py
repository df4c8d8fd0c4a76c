"""Organization skills (`UserSkill` rows) edited in the admin: their rules and registry notifications.

Validation lives here so every surface shares it; the notification hangs off model signals, so any
write (admin form, bulk action, shell) bumps the organization's `RegistryVersion` and every process
offers the new version of the skill from its next agent run (agents_app.personas.skills).
"""

from __future__ import annotations

from django.db.models.signals import post_delete, post_save
from django.utils.translation import gettext as _

from agents_app.models import RegistryVersion, UserSkill
from agents_app.personas.schema import MAX_PERSONA_BYTES, NAME_MAX_LENGTH, NAME_RE
from agents_app.personas.skills import MAX_SKILL_FILE_BYTES, SKILL_FILE, SkillFileError, clean_name

MAX_FILES = 50


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def field_errors(skill: UserSkill) -> dict[str, list[str]]:
    """Every rule an organization skill must pass, as messages per field (docs/skills.md)."""
    errors: dict[str, list[str]] = {}

    def add(name: str, message: str) -> None:
        errors.setdefault(name, []).append(message)

    name = skill.name or ""
    if len(name) > NAME_MAX_LENGTH or not NAME_RE.match(name):
        add("name", _("Use lowercase letters, digits and single hyphens, like 'postgres-vacuum'."))
    elif (
        skill.organization_id
        and UserSkill.objects.filter(organization_id=skill.organization_id, name=name)
        .exclude(pk=skill.pk)
        .exists()
    ):
        add("name", _("Your organization already has a skill named %(name)s.") % {"name": repr(name)})
    if not (skill.description or "").strip():
        add("description", _("Say in one line what the skill is for: agents choose it by this line."))
    if not (skill.body or "").strip():
        add("body", _("A skill needs a body: the instructions the agent loads."))
    elif _size(skill.body) > MAX_PERSONA_BYTES:
        add("body", _("The body is larger than %(limit)s bytes.") % {"limit": MAX_PERSONA_BYTES})
    for message in _file_errors(skill.files):
        add("files", message)
    return errors


def _file_errors(files: object) -> list[str]:
    if files in (None, ""):
        return []
    if not isinstance(files, dict):
        return [_('Give the files as a mapping of file names to text, like {"reference.md": "..."}.')]
    if len(files) > MAX_FILES:
        return [_("At most %(count)s files.") % {"count": MAX_FILES}]
    problems = []
    for filename, text in files.items():
        try:
            cleaned = clean_name(filename).as_posix()
        except SkillFileError:
            problems.append(_("%(file)s: use a relative path inside the skill.") % {"file": repr(filename)})
            continue
        if cleaned == SKILL_FILE or cleaned != filename:
            problems.append(_("%(file)s: use a relative path inside the skill.") % {"file": repr(filename)})
        elif not isinstance(text, str):
            problems.append(_("%(file)s: the content must be text.") % {"file": repr(filename)})
        elif _size(text) > MAX_SKILL_FILE_BYTES:
            problems.append(
                _("%(file)s is larger than %(limit)s KB.")
                % {"file": repr(filename), "limit": MAX_SKILL_FILE_BYTES // 1024}
            )
    return problems


def _on_changed(sender, instance: UserSkill, **kwargs) -> None:
    RegistryVersion.bump(instance.organization_id)


def connect_signals() -> None:
    post_save.connect(_on_changed, sender=UserSkill, dispatch_uid="ongrid-user-skill-saved")
    post_delete.connect(_on_changed, sender=UserSkill, dispatch_uid="ongrid-user-skill-deleted")
