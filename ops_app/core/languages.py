"""The viewer's language, decided the same way for a request and for a websocket handshake.

Which language: the user's own setting (`Membership.language`, on the Preferences page or the
header's switch) when set, else the language cookie, else the browser's Accept-Language (Django's
own rules), else English. See docs/i18n.md. Here, below the surfaces, so that every surface's
socket (the chat's, the incident page's) makes the same choice as the pages.
"""

from __future__ import annotations

from http.cookies import CookieError, SimpleCookie

from django.conf import settings
from django.http import HttpRequest
from django.utils import translation


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
