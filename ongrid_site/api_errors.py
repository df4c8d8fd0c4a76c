"""One shape for every API error: a JSON object whose "error" is a readable sentence.

DRF answers go through `ErrorJSONRenderer`, which adds "error" to any 4xx/5xx body that lacks it
(validation errors keep their per-field keys, "detail" is kept for existing clients). Errors that
happen outside DRF (Django's body-size limit, an unknown /api/ URL, an uncaught exception) reach
the handlers below, which answer JSON for /api/ paths and Django's usual pages elsewhere.
"""

from __future__ import annotations

import logging

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, JsonResponse
from django.utils.translation import gettext as _
from django.views import defaults
from rest_framework.renderers import JSONRenderer

log = logging.getLogger(__name__)
API_PREFIX = "/api/"


def _first_message(value: object) -> str:
    """The first human message in a DRF error structure (string, list or mapping)."""
    while isinstance(value, list | tuple | dict):
        if not value:
            return ""
        value = next(iter(value.values())) if isinstance(value, dict) else value[0]
    return str(value)


def summary(data: object) -> str:
    if isinstance(data, dict):
        if "detail" in data:
            return _first_message(data["detail"])
        for key, value in data.items():
            message = _first_message(value)
            return message if key in ("non_field_errors", "__all__") else f"{key}: {message}"
        return "invalid request"
    return _first_message(data) or "invalid request"


def error_body(data: object) -> dict:
    """`data` (a DRF error body) with a readable "error"; an existing string "error" is kept."""
    if isinstance(data, dict):
        if isinstance(data.get("error"), str):
            return data
        if "error" in data:  # a serializer field called "error"
            return {"error": summary(data), "fields": data}
        return {"error": summary(data), **data}
    return {"error": summary(data), "errors": data}


class ErrorJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        response = (renderer_context or {}).get("response")
        if response is not None and response.status_code >= 400 and data is not None:
            data = error_body(data)
        return super().render(data, accepted_media_type, renderer_context)


def is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def bad_request(request: HttpRequest, exception: Exception, template_name: str = "400.html"):
    if not is_api(request):
        return defaults.bad_request(request, exception, template_name)
    if isinstance(exception, RequestDataTooBig):
        return JsonResponse({"error": _("the request body is larger than this endpoint accepts")}, status=413)
    return JsonResponse({"error": _("bad request")}, status=400)


def permission_denied(request: HttpRequest, exception: Exception, template_name: str = "403.html"):
    if not is_api(request):
        return defaults.permission_denied(request, exception, template_name)
    return JsonResponse({"error": str(exception) or _("permission denied")}, status=403)


def page_not_found(request: HttpRequest, exception: Exception, template_name: str = "404.html"):
    if not is_api(request):
        return defaults.page_not_found(request, exception, template_name)
    return JsonResponse({"error": _("no API endpoint at %(path)s") % {"path": request.path}}, status=404)


def server_error(request: HttpRequest, template_name: str = "500.html"):
    if not is_api(request):
        return defaults.server_error(request, template_name)
    return JsonResponse({"error": _("internal server error; the details are in the server log")}, status=500)
