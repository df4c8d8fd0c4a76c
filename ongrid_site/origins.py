"""The websocket Origin check: a browser may open a socket only from a page of this very site.

An Origin is accepted when it equals the request's own origin (the scheme, the Host header's name
and port; the name must be in ALLOWED_HOSTS) or is listed in CSRF_TRUSTED_ORIGINS, both compared
as (scheme, host, port). Everything else is refused at the handshake, a missing Origin included.
Host names alone are not enough: http://site:8080 or http://site is another origin than
https://site, and a page there must not drive a signed-in user's chat.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}
LOCAL_HOSTS = [".localhost", "127.0.0.1", "[::1]"]  # what Django allows with DEBUG and no ALLOWED_HOSTS

Origin = tuple[str, str, int]


def parse_origin(value: str) -> Origin | None:
    """("https", "ongrid.example", 443) for "https://ongrid.example", None for anything else."""
    try:
        parts = urlsplit(value.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname or parts.path not in ("", "/"):
        return None
    if parts.username or parts.password or parts.query or parts.fragment:
        return None
    return scheme, parts.hostname.lower(), port or DEFAULT_PORTS[scheme]


def _headers(scope: dict) -> dict[str, str]:
    return {name.decode("latin1").lower(): value.decode("latin1") for name, value in scope.get("headers", [])}


def own_origin(scope: dict, headers: dict[str, str]) -> Origin | None:
    """The origin of the page that served this site, from the Host header and the scheme; None
    when the Host is missing or not one of ALLOWED_HOSTS."""
    host = headers.get("host", "").strip()
    domain, _ = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS or (LOCAL_HOSTS if settings.DEBUG else [])
    if not domain or not validate_host(domain, allowed):
        return None
    scheme = "https" if scope.get("scheme") in ("wss", "https") else "http"
    if settings.SECURE_PROXY_SSL_HEADER:  # behind a TLS proxy, its word on the scheme counts
        forwarded = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
        if forwarded in DEFAULT_PORTS:
            scheme = forwarded
    return parse_origin(f"{scheme}://{host}")


def trusted(origin: Origin) -> bool:
    """Listed in CSRF_TRUSTED_ORIGINS; `https://*.example.com` covers subdomains as in Django."""
    scheme, host, port = origin
    for entry in settings.CSRF_TRUSTED_ORIGINS:
        wildcard = "://*." in entry
        listed = parse_origin(entry.replace("://*.", "://", 1) if wildcard else entry)
        if listed is None or listed[0] != scheme or listed[2] != port:
            continue
        if host == listed[1] or (wildcard and host.endswith("." + listed[1])):
            return True
    return False


def origin_allowed(scope: dict) -> bool:
    headers = _headers(scope)
    origin = parse_origin(headers.get("origin", ""))
    own = own_origin(scope, headers)
    if origin is None or own is None:
        return False
    return origin == own or trusted(origin)


class ExactOriginValidator:
    """ASGI middleware in front of the websocket router: refuses a foreign Origin at the handshake."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
