"""The user's own settings: for now, the time zone pages show times in (overriding the browser's)."""

from __future__ import annotations

from zoneinfo import available_timezones

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from ops_app.services import set_timezone
from web_app.timezones import chosen_zone


class PreferencesForm(forms.Form):
    timezone = forms.ChoiceField(
        required=False,
        label="Time zone",
        help_text="Blank: use the zone your browser reports.",
    )

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        zones = sorted(z for z in available_timezones() if "/" in z or z == "UTC")
        self.fields["timezone"].choices = [("", "Follow my browser")] + [(z, z) for z in zones]


@login_required
def preferences(request: HttpRequest) -> HttpResponse:
    has_membership = getattr(request.user, "membership", None) is not None
    form = PreferencesForm(request.POST or None, initial={"timezone": chosen_zone(request.user)})
    if request.method == "POST" and has_membership and form.is_valid():
        set_timezone(request.user, form.cleaned_data["timezone"])
        messages.success(request, "Saved.")
        return redirect("preferences")
    return render(request, "preferences.html", {"form": form, "has_membership": has_membership})
