"""The OpenAPI schema (`/api/schema/`) and its Swagger UI page (`/api/docs/`), for signed-in
users only (a session or an API token), as the threat model of docs/security.md says: anonymous
callers get the login page, `/healthz` and the webhooks, not a map of the API.

Refusals keep each address's manner: the schema answers the API's JSON error
(`ongrid_site.api_errors`), whatever format the schema itself would have been rendered in; the
docs page, opened in a browser, sends the visitor to the login page and back."""

from __future__ import annotations

from django.contrib.auth.views import redirect_to_login
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework import exceptions
from rest_framework.permissions import IsAuthenticated

from ongrid_site.api_errors import ErrorJSONRenderer


class SchemaView(SpectacularAPIView):
    permission_classes = [IsAuthenticated]

    def check_permissions(self, request) -> None:
        # DRF counts throttles after permissions, so an anonymous caller would never meet the
        # anonymous rate here; count them before they are refused.
        if not request.user.is_authenticated:
            self.check_throttles(request)
        super().check_permissions(request)

    def finalize_response(self, request, response, *args, **kwargs):
        if response.status_code >= 400:  # an error is JSON with "error", never YAML
            request.accepted_renderer, request.accepted_media_type = ErrorJSONRenderer(), "application/json"
        return super().finalize_response(request, response, *args, **kwargs)


class DocsView(SpectacularSwaggerSplitView):
    permission_classes = [IsAuthenticated]

    def handle_exception(self, exc):
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            return redirect_to_login(self.request.get_full_path())
        return super().handle_exception(exc)
