"""Admin forms for user agents: list keys edited as plain text, and every persona rule checked
by `agents_app.personas.user_agents` so the admin refuses exactly what the registry could not use."""

from __future__ import annotations

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS
from django.utils.translation import gettext_lazy as _

from agents_app.models import UserAgent, UserSkill
from agents_app.personas import user_agents, user_skills
from agents_app.personas.schema import MAX_PERSONA_BYTES
from agents_app.toolsets import names as tool_names
from ops_app.admin.scoping import visible_organizations
from ops_app.tenancy.scoping import organization_of, sees_all_tenants

TOOL_GROUPS = (
    ("read", _("Read — inspect only"), tool_names.read_tools),
    ("write", _("Write — change something; goes through the review gate"), tool_names.write_tools),
    ("control", _("Control — the coordinator's orchestration tools"), tool_names.control_tools),
)


class NameListField(forms.CharField):
    """A list of names typed one per line or comma-separated; shown the same way."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 40})

    def __init__(self, *, empty_is_none: bool = False, **kwargs):
        self.empty_is_none = empty_is_none
        kwargs.setdefault("required", False)
        super().__init__(**kwargs)

    def prepare_value(self, value):
        if isinstance(value, list | tuple):
            return "\n".join(str(item) for item in value)
        return value

    def to_python(self, value):
        text = super().to_python(value) or ""
        items = [item.strip() for line in text.splitlines() for item in line.split(",")]
        items = list(dict.fromkeys(item for item in items if item))
        if not items and self.empty_is_none:
            return None
        return items

    def has_changed(self, initial, data):
        return self.to_python(self.prepare_value(initial)) != self.to_python(data)


def _split_names(values: list[str]) -> list[str]:
    items = [item.strip() for value in values for line in value.splitlines() for item in line.split(",")]
    return list(dict.fromkeys(item for item in items if item))


class ToolPickerWidget(forms.Widget):
    """Checkboxes for every known tool, grouped by class, plus a text box for `*` patterns.

    The two halves post under `<name>` (checked tools) and `<name>_patterns` (free text) and come
    back as one list, so a persona keeps wildcards such as `host_*` or `mcp__grafana__*` next to
    the tools picked by hand. Free text posted under `<name>` itself (a script, an old form) is
    split like the pattern box.
    """

    template_name = "agents_app/widgets/tool_picker.html"

    def format_value(self, value):
        if value is None or value == "":
            return []
        if isinstance(value, str):
            return _split_names([value])
        return [str(item) for item in value]

    def get_context(self, name, value, attrs):
        context = super().get_context(name, value, attrs)
        chosen = self.format_value(value)
        known = tool_names.known_tools()
        context["widget"]["groups"] = [
            {
                "key": key,
                "label": label,
                "tools": [{"name": tool, "checked": tool in chosen} for tool in listed()],
            }
            for key, label, listed in TOOL_GROUPS
        ]
        context["widget"]["patterns"] = "\n".join(item for item in chosen if item not in known)
        return context

    def value_from_datadict(self, data, files, name):
        getlist = getattr(data, "getlist", None)
        picked = getlist(name) if getlist else data.get(name, [])
        if isinstance(picked, str):
            picked = [picked]
        return _split_names([*picked, data.get(f"{name}_patterns", "")])

    def value_omitted_from_data(self, data, files, name):
        return False  # unticked checkboxes post nothing: an empty list is a real answer

    def id_for_label(self, id_):
        return f"{id_}_patterns" if id_ else id_


class ToolListField(NameListField):
    """`NameListField` fed by the tool picker: a list in, the same validation out."""

    widget = ToolPickerWidget

    def prepare_value(self, value):
        return value

    def to_python(self, value):
        if isinstance(value, list | tuple):
            value = "\n".join(str(item) for item in value)
        return super().to_python(value)

    def has_changed(self, initial, data):
        return self.to_python(initial or []) != self.to_python(data)


class OrganizationFormMixin:
    """The organization of a row an org admin edits is always theirs; platform staff choose it
    (preselected when they see exactly one)."""

    def _set_organization(self, request) -> None:
        self.user = getattr(request, "user", None)
        if self.user is not None and not sees_all_tenants(self.user):
            # The organization field is hidden for org admins; the row is always theirs.
            self.instance.organization = organization_of(self.user)
        elif self.user is not None and "organization" in self.fields and not self.instance.pk:
            self._preselect_single_organization()

    def _preselect_single_organization(self) -> None:
        """Platform staff with exactly one organization to choose from are not asked to choose."""
        choices = list(visible_organizations(self.user)[:2])
        if len(choices) != 1:
            return
        field = self.fields["organization"]
        field.initial = choices[0].pk
        field.required = False
        field.widget = forms.HiddenInput()
        self.single_organization = choices[0]

    def clean_organization(self):
        chosen = self.cleaned_data.get("organization")
        return chosen or getattr(self, "single_organization", None)

    def _add_rule_errors(self, errors: dict[str, list[str]]) -> None:
        for field, messages in errors.items():
            target = field if field in self.fields else NON_FIELD_ERRORS
            for message in messages:
                if not (target in self.errors and message in self.errors[target]):
                    self.add_error(None if target == NON_FIELD_ERRORS else target, message)


class UserAgentForm(OrganizationFormMixin, forms.ModelForm):
    tools = ToolListField(
        empty_is_none=True,
        help_text=_(
            "Tick tools, or type '*' patterns (one per line) such as host_*, *_skill or "
            "mcp__grafana__*. Nothing at all means the coordinator's read-only set."
        ),
    )
    disallowed_tools = ToolListField(help_text=_("Tools never given to this agent; beats the whitelist."))
    skills = NameListField(help_text=_("Skills to activate, one per line."))

    class Meta:
        model = UserAgent
        fields = ("organization", *user_agents.PERSONA_FIELDS, "enabled")

    def __init__(self, *args, request=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._set_organization(request)
        if "extra" in self.fields:
            self.fields["extra"].required = False

    def _post_clean(self) -> None:
        super()._post_clean()
        if self.instance.extra is None:
            self.instance.extra = {}
        self._add_rule_errors(user_agents.field_errors(self.instance, self.user))


class UserSkillForm(OrganizationFormMixin, forms.ModelForm):
    """An organization's skill, checked by `agents_app.personas.user_skills` (docs/skills.md)."""

    class Meta:
        model = UserSkill
        fields = ("organization", "name", "description", "when_to_use", "body", "files", "always", "enabled")

    def __init__(self, *args, request=None, **kwargs):
        super().__init__(*args, **kwargs)
        self._set_organization(request)
        if "files" in self.fields:
            self.fields["files"].required = False

    def _post_clean(self) -> None:
        super()._post_clean()
        if self.instance.files is None:
            self.instance.files = {}
        self._add_rule_errors(user_skills.field_errors(self.instance))


class ImportForm(forms.Form):
    file = forms.FileField(
        required=False, label=_("File"), help_text=_("A persona .md file (YAML front matter + body).")
    )
    text = forms.CharField(
        required=False,
        label=_("Text"),
        widget=forms.Textarea(attrs={"rows": 16, "cols": 90}),
        help_text=_("…or paste it here."),
    )
    overwrite = forms.BooleanField(required=False, label=_("Replace an existing agent of the same name"))

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        if upload:
            if upload.size > MAX_PERSONA_BYTES:
                raise forms.ValidationError(
                    _("The file is %(size)s bytes; the limit is %(limit)s bytes.")
                    % {"size": upload.size, "limit": MAX_PERSONA_BYTES}
                )
            try:
                data["markdown"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError(_("The file is not UTF-8 text.")) from None
        elif data.get("text", "").strip():
            data["markdown"] = data["text"]
        else:
            raise forms.ValidationError(_("Choose a file or paste its text."))
        return data
