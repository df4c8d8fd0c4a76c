"""Admin forms for user agents: list keys edited as plain text, and every persona rule checked
by `agents_app.user_agents` so the admin refuses exactly what the registry could not use."""

from __future__ import annotations

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS

from agents_app import user_agents
from agents_app.models import UserAgent
from agents_app.personas import MAX_PERSONA_BYTES
from ops_app.tenancy import organization_of, sees_all_tenants


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


class UserAgentForm(forms.ModelForm):
    tools = NameListField(
        empty_is_none=True,
        help_text="One tool per line (or comma-separated); '*' patterns like host_* allowed. "
        "Leave empty for the coordinator's read-only set.",
    )
    disallowed_tools = NameListField(help_text="Tools never given to this agent; beats the whitelist.")
    skills = NameListField(help_text="Skills to activate, one per line.")

    class Meta:
        model = UserAgent
        fields = ("organization", *user_agents.PERSONA_FIELDS, "enabled")

    def __init__(self, *args, request=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = getattr(request, "user", None)
        if self.user is not None and not sees_all_tenants(self.user):
            # The organization field is hidden for org admins; the row is always theirs.
            self.instance.organization = organization_of(self.user)
        if "extra" in self.fields:
            self.fields["extra"].required = False

    def _post_clean(self) -> None:
        super()._post_clean()
        if self.instance.extra is None:
            self.instance.extra = {}
        for field, messages in user_agents.field_errors(self.instance, self.user).items():
            target = field if field in self.fields else NON_FIELD_ERRORS
            for message in messages:
                if not (target in self.errors and message in self.errors[target]):
                    self.add_error(None if target == NON_FIELD_ERRORS else target, message)


class ImportForm(forms.Form):
    file = forms.FileField(required=False, help_text="A persona .md file (YAML front matter + body).")
    text = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 16, "cols": 90}), help_text="…or paste it here."
    )
    overwrite = forms.BooleanField(required=False, label="Replace an existing agent of the same name")

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        if upload:
            if upload.size > MAX_PERSONA_BYTES:
                raise forms.ValidationError(
                    f"The file is {upload.size} bytes; the limit is {MAX_PERSONA_BYTES} bytes."
                )
            try:
                data["markdown"] = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError("The file is not UTF-8 text.") from None
        elif data.get("text", "").strip():
            data["markdown"] = data["text"]
        else:
            raise forms.ValidationError("Choose a file or paste its text.")
        return data
