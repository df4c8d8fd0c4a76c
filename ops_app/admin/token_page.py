"""The page that shows a token Ongrid just issued (an Alertmanager receiver's, an API token's): the
only time the token exists in clear, so it is rendered once and never kept in a message."""

from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.utils.translation import gettext


def token_issued_response(model_admin, request, obj, token: str, usage: list[str], example: str = ""):
    """The one page that ever shows a token Ongrid issued (rendered, never stored in a message)."""
    opts = model_admin.model._meta
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": opts,
        "title": gettext("New token of %(owner)s") % {"owner": obj},
        "token": token,
        "usage": usage,
        "example": example,
        "back_url": reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[obj.pk]),
    }
    response = TemplateResponse(request, "admin/ops_app/token_issued.html", context)
    add_never_cache_headers(response)
    return response
