from django.conf import settings
from django.http import HttpRequest

from ops_app.tenancy.scoping import organization_of


def ongrid(request: HttpRequest) -> dict:
    return {
        "ongrid_llm": settings.CONFIG.llm,
        "ongrid_offline": settings.CONFIG.llm == "offline",
        "current_organization": organization_of(getattr(request, "user", None)),
    }
