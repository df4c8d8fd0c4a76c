"""The viewer's language, for every page.

Which language: the user's own setting (`Membership.language`, on the Preferences page or the
header's switch) when set, else what Django's LocaleMiddleware found (the switch's cookie, else the
browser's Accept-Language), else English. See docs/i18n.md.
"""

from __future__ import annotations

from http.cookies import CookieError, SimpleCookie

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import translation
from django.views.decorators.http import require_POST
from django.views.i18n import set_language as django_set_language

from ops_app.services import set_language


def supported(code: str | None) -> str:
    """`code` if it is one of settings.LANGUAGES, else ''."""
    return code if code in {known for known, _ in settings.LANGUAGES} else ""


def chosen_language(user) -> str:
    """The language the user picked ('' when they follow the browser)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return ""
    membership = getattr(user, "membership", None)  # None for staff without an organization
    return supported(getattr(membership, "language", "") or "")


def language_for_scope(scope: dict, user) -> str:
    """The same choice for a websocket, from the handshake: the user's setting, else the language
    cookie, else the browser's Accept-Language (Django's own rules), else English."""
    chosen = chosen_language(user)
    if chosen:
        return chosen
    handshake = HttpRequest()
    for name, value in scope.get("headers", []):
        if name == b"accept-language":
            handshake.META["HTTP_ACCEPT_LANGUAGE"] = value.decode("latin-1")
        elif name == b"cookie":
            cookies = SimpleCookie()
            try:
                cookies.load(value.decode("latin-1"))
            except CookieError:  # a malformed cookie header just means "no cookie"
                continue
            handshake.COOKIES.update({key: morsel.value for key, morsel in cookies.items()})
    return translation.get_language_from_request(handshake)


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
