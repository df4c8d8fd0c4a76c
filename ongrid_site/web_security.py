"""HTTP-side protections of the web surface: transport settings (cookies, HSTS, the TLS proxy) and
the Content-Security-Policy header. docs/security.md, "The web surface", explains the choices."""

from __future__ import annotations

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

from ongrid_site.config import Config

# Probes and scrapers inside the network often speak plain http to a backend directly.
PLAIN_HTTP_PATHS = [r"^healthz$", r"^metrics$"]
BROWSABLE_API_PREFIX = "/api/"


def transport_settings(config: Config) -> dict:
    """Django settings for cookies, HSTS and the TLS proxy, derived from the configuration.

    `https` says browsers reach the site over https (directly or through a TLS proxy): cookies
    are then Secure and HSTS is sent on https responses. Redirecting http to https needs Django to
    tell the two apart, which behind a TLS-terminating proxy only `tls_proxy` (trust the proxy's
    X-Forwarded-Proto) allows; without it a redirect would loop forever, so there is none.
    """
    https = config.https
    return {
        "SESSION_COOKIE_SECURE": https,
        "CSRF_COOKIE_SECURE": https,
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "CSRF_COOKIE_SAMESITE": "Lax",
        "SECURE_HSTS_SECONDS": config.hsts_seconds if https else 0,
        "SECURE_HSTS_INCLUDE_SUBDOMAINS": True,
        "SECURE_HSTS_PRELOAD": True,
        "SECURE_PROXY_SSL_HEADER": ("HTTP_X_FORWARDED_PROTO", "https") if config.tls_proxy else None,
        "SECURE_SSL_REDIRECT": https and config.tls_proxy,
        "SECURE_REDIRECT_EXEMPT": PLAIN_HTTP_PATHS,
        "SECURE_CONTENT_TYPE_NOSNIFF": True,
        "SECURE_REFERRER_POLICY": "same-origin",
        "SECURE_CROSS_ORIGIN_OPENER_POLICY": "same-origin",
        "X_FRAME_OPTIONS": "DENY",
    }


def content_security_policy(request: HttpRequest) -> str:
    """Scripts and styles only from our own static files: no inline code, no eval, no third
    parties. The chat's websocket is named explicitly next to 'self' for browsers that predate
    CSP 3, where 'self' does not cover ws:/wss:.

    One exception: DRF's browsable API (its own templates, all under /api/) uses a <style> element
    and style attributes, so those pages may use inline styles; never inline scripts."""
    connect = ["'self'"]
    try:
        host = request.get_host()
    except DisallowedHost:
        host = None
    if host:
        connect.append(f"{'wss' if request.is_secure() else 'ws'}://{host}")
    directives = {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": connect,
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
    if request.path.startswith(BROWSABLE_API_PREFIX):
        directives["style-src"] = ["'self'", "'unsafe-inline'"]
    return "; ".join(f"{name} {' '.join(sources)}" for name, sources in directives.items())


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Adds the policy to every response that does not carry one of its own."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = content_security_policy(request)
        return response
