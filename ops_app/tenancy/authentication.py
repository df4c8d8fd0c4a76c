"""REST API authentication by Ongrid's own tokens (stored hashed; see ops_app.models.ApiToken).

`Authorization: Token <token>` (the header DRF's authtoken used, so clients keep working) or
`Authorization: Bearer <token>`. A token authenticates its user; tenancy and roles follow the user.
"""

from __future__ import annotations

import datetime as dt

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions

from ops_app.models import ApiToken

KEYWORDS = ("token", "bearer")
# last_used_at is bookkeeping: written at most this often per token, not on every request.
TOUCH_EVERY = dt.timedelta(minutes=5)


class ApiTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request):
        parts = authentication.get_authorization_header(request).split()
        if not parts or parts[0].decode(errors="replace").lower() not in KEYWORDS:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: expected 'Token <token>'.")
        try:
            token = parts[1].decode()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token header.") from None
        row = ApiToken.for_token(token)
        if row is None:
            raise exceptions.AuthenticationFailed("Invalid token.")
        if not row.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        now = timezone.now()
        if row.last_used_at is None or now - row.last_used_at > TOUCH_EVERY:
            ApiToken.objects.filter(pk=row.pk).update(last_used_at=now)
        return row.user, row

    def authenticate_header(self, request) -> str:
        return self.keyword


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """Describes the token header in the OpenAPI schema."""

    target_class = "ops_app.tenancy.authentication.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": 'An Ongrid API token, prefixed with "Token ": `Authorization: Token ogt_…`.',
        }
