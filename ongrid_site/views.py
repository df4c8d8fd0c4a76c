from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from ongrid_site.health import run_checks
from ops_app.tenancy import organization_of


@never_cache
async def healthz(request: HttpRequest) -> JsonResponse:
    healthy, checks = await run_checks()
    body = {"status": "ok" if healthy else "unhealthy", "checks": checks}
    return JsonResponse(body, status=200 if healthy else 503)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Members land in their chats; someone with no organization gets the explanation page."""
    if organization_of(request.user) is None:
        return render(request, "home.html")
    return redirect("chat-home")
