"""The user's own settings: the language and the time zone pages are shown in (overriding the
browser's)."""

from __future__ import annotations

from zoneinfo import available_timezones

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from ops_app.tenancy.accounts import set_language, set_timezone
from web_app.languages import chosen_language
from web_app.timezones import chosen_zone


class PreferencesForm(forms.Form):
    language = forms.ChoiceField(
        required=False,
        label=gettext_lazy("Language"),
        help_text=gettext_lazy("Pages and the agents' replies use it. Blank: your browser's language."),
    )
    timezone = forms.ChoiceField(
        required=False,
        label=gettext_lazy("Time zone"),
        help_text=gettext_lazy("Blank: use the zone your browser reports."),
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        # Each language is named in itself, so a user lost in the wrong one still finds their own.
        self.fields["language"].choices = [("", _("Follow my browser"))] + list(settings.LANGUAGES)
        zones = sorted(z for z in available_timezones() if "/" in z or z == "UTC")
        self.fields["timezone"].choices = [("", _("Follow my browser"))] + [(z, z) for z in zones]


@login_required
def preferences(request: HttpRequest) -> HttpResponse:
    has_membership = getattr(request.user, "membership", None) is not None
    initial = {"timezone": chosen_zone(request.user), "language": chosen_language(request.user)}
    form = PreferencesForm(request.POST or None, initial=initial)
    if request.method == "POST" and has_membership and form.is_valid():
        set_timezone(request.user, form.cleaned_data["timezone"])
        set_language(request.user, form.cleaned_data["language"])
        if form.cleaned_data["language"]:
            translation.activate(form.cleaned_data["language"])  # "Saved." in the language just chosen
        messages.success(request, _("Saved."))
        return redirect("preferences")
    return render(request, "preferences.html", {"form": form, "has_membership": has_membership})
