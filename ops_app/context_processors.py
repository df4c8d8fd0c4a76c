from django.conf import settings
from django.http import HttpRequest

from ops_app.integrations.llm_endpoints import has_default_endpoint
from ops_app.tenancy.scoping import organization_of


def ongrid(request: HttpRequest) -> dict:
    """What every page shows about the deployment. The offline banner follows the LLM the
    viewer's agents really use: the organization's default endpoint beats the deployment's
    environment (as `agents_app.llm.aget_provider` decides), so a working endpoint is never
    reported as "no LLM is configured"."""
    user = getattr(request, "user", None)
    organization = organization_of(user)
    offline = settings.CONFIG.llm == "offline"
    if offline and getattr(user, "is_authenticated", False) and organization is not None:
        offline = not has_default_endpoint(organization.pk)
    return {
        "ongrid_llm": settings.CONFIG.llm,
        "ongrid_offline": offline,
        "current_organization": organization,
    }
