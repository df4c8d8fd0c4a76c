"""The admin's pack forms: the three ways to fetch a pack, and a trusted key checked as it is typed.

A Git token is a password field that is never rendered back (not even after an error), and it
is not stored: it serves the one fetch it was typed for.
"""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from agents_app.models import TrustedPackKey
from agents_app.packs import archive, signatures
from ops_app.admin.scoping import visible_organizations
from ops_app.tenancy.scoping import sees_all_tenants

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".zip")


class _ForOrganization(forms.Form):
    """Platform staff choose the organization a pack is for; org admins install into their own."""

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        if user is not None and sees_all_tenants(user):
            self.fields["organization"] = forms.ModelChoiceField(
                label=_("Organization"), queryset=visible_organizations(user).order_by("name")
            )


class UploadForm(_ForOrganization):
    archive = forms.FileField(
        label=_("Pack archive"), help_text=_("A .tar.gz, .tgz or .zip of the pack directory.")
    )

    def clean_archive(self) -> tuple[bytes, str]:
        upload = self.cleaned_data["archive"]
        if not upload.name.lower().endswith(ARCHIVE_SUFFIXES):
            raise forms.ValidationError(_("Upload a .tar.gz, .tgz or .zip file."))
        if upload.size > archive.MAX_PACK_BYTES:
            raise forms.ValidationError(
                _("The archive is larger than %(limit)s MB.")
                % {"limit": archive.MAX_PACK_BYTES // (1024 * 1024)}
            )
        return upload.read(), upload.name


class GitForm(_ForOrganization):
    url = forms.CharField(
        label=_("Repository URL"), max_length=500, help_text=_("e.g. https://git.example.com/ops/packs.git")
    )
    ref = forms.CharField(label=_("Branch or tag"), max_length=200, initial="main")
    path = forms.CharField(
        label=_("Path in the repository"),
        max_length=300,
        required=False,
        help_text=_("The folder holding pack.yaml; empty: the repository's root."),
    )
    token = forms.CharField(
        label=_("Access token"),
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text=_("For a private repository; used for this fetch only, never stored or shown again."),
    )


class CatalogForm(_ForOrganization):
    index_url = forms.CharField(label=_("Catalog index URL"), max_length=500)
    name = forms.CharField(
        label=_("Pack name"), max_length=64, required=False, help_text=_("Empty: list the catalog's packs.")
    )
    version = forms.CharField(
        label=_("Version"), max_length=50, required=False, help_text=_("Empty: the newest version.")
    )


class UpgradeForm(forms.Form):
    token = forms.CharField(
        label=_("Access token"),
        required=False,
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off"}),
        help_text=_("For a private repository; used for this fetch only, never stored or shown again."),
    )


class TrustedPackKeyForm(forms.ModelForm):
    """A minisign public key; its key ID is read from it, so a malformed key never saves."""

    organization = None  # set by TenantScopedAdmin.get_form for an org admin

    class Meta:
        model = TrustedPackKey
        fields = ("organization", "name", "public_key")
        widgets = {"public_key": forms.Textarea(attrs={"rows": 3, "cols": 80})}

    def clean_public_key(self) -> str:
        text = self.cleaned_data["public_key"].strip()
        try:
            self._key = signatures.parse_public_key(text)
        except signatures.SignatureError as exc:
            raise forms.ValidationError(str(exc)) from None
        return text

    def clean(self):
        cleaned = super().clean()
        key = getattr(self, "_key", None)
        organization = cleaned.get("organization") or self.organization or self.instance_organization()
        if key is not None and organization is not None:
            taken = TrustedPackKey.objects.filter(organization=organization, key_id=key.key_id)
            if taken.exclude(pk=self.instance.pk).exists():
                self.add_error("public_key", _("Your organization already trusts this key."))
        return cleaned

    def instance_organization(self):
        return self.instance.organization if self.instance.organization_id else None

    def save(self, commit=True):
        key = getattr(self, "_key", None)
        if key is not None:
            self.instance.key_id = key.key_id
        return super().save(commit)
