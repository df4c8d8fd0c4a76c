"""The viewer's time zone, for every page and the chat socket.

Which zone: the user's own setting (`Membership.timezone`, on the Preferences page) when set, else
the zone the browser reported in the `ongrid_tz` cookie (static/js/ongrid.js sets it from
`Intl.DateTimeFormat().resolvedOptions().timeZone`), else UTC. Anything that is not a known IANA
zone is ignored, so a forged cookie can at worst show UTC.
"""

from __future__ import annotations

from http.cookies import SimpleCookie
from urllib.parse import unquote
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.http import HttpRequest, HttpResponse
from django.utils import timezone

COOKIE = "ongrid_tz"
DEFAULT = "UTC"


def valid_zone(name: str | None) -> ZoneInfo | None:
    name = unquote(name or "")  # the browser writes the cookie URL-encoded (America%2FNew_York)
    if not name or len(name) > 64 or ".." in name or name.startswith("/"):
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


def chosen_zone(user) -> str:
    """The zone the user picked in Preferences ('' when they follow the browser)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return ""
    membership = getattr(user, "membership", None)  # None for staff without an organization
    return getattr(membership, "timezone", "") or ""


def viewer_zone(user, browser_zone: str | None) -> ZoneInfo:
    return valid_zone(chosen_zone(user)) or valid_zone(browser_zone) or ZoneInfo(DEFAULT)


def zone_for_scope(scope: dict, user) -> ZoneInfo:
    """The same choice for a websocket, from the handshake's cookie header."""
    cookies = SimpleCookie()
    for name, value in scope.get("headers", []):
        if name == b"cookie":
            try:
                cookies.load(value.decode("latin-1"))
            except Exception:  # noqa: BLE001 - a malformed cookie header just means "no zone"
                pass
    morsel = cookies.get(COOKIE)
    return viewer_zone(user, morsel.value if morsel else None)


class ViewerTimezoneMiddleware:
    """Activates the viewer's zone for the request, so templates and the admin show local times."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        zone = viewer_zone(getattr(request, "user", None), request.COOKIES.get(COOKIE))
        request.timezone = zone
        timezone.activate(zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


def timezone_context(request: HttpRequest) -> dict:
    """`viewer_timezone` for the header: the zone every time on the page is shown in."""
    zone = getattr(request, "timezone", None)
    return {"viewer_timezone": str(zone) if zone else DEFAULT}
