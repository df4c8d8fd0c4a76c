"""The viewer's language, for every page.

Which language: the user's own setting (`Membership.language`, on the Preferences page or the
header's switch) when set, else what Django's LocaleMiddleware found (the switch's cookie, else the
browser's Accept-Language), else English. See docs/i18n.md.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.views.decorators.http import require_POST
from django.views.i18n import set_language as django_set_language

from ops_app.core.languages import chosen_language, supported
from ops_app.tenancy.accounts import set_language

__all__ = ["UserLanguageMiddleware", "chosen_language", "switch_language"]  # chosen_language: the pages' own


class UserLanguageMiddleware:
    """Activates the user's own language over the browser's; runs after authentication."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        language = chosen_language(getattr(request, "user", None))
        if language:
            translation.activate(language)
            request.LANGUAGE_CODE = translation.get_language()
        return self.get_response(request)


@require_POST
def switch_language(request: HttpRequest) -> HttpResponse:
    """The header's switch: remembered on the user's membership (so it follows them to every browser
    and to the agents' replies), and in Django's language cookie for anyone without one."""
    language = supported(request.POST.get("language"))
    if language and getattr(request.user, "membership", None) is not None:
        set_language(request.user, language)
    return django_set_language(request)
