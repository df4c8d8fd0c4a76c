from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache

from ongrid_site.health import run_checks
from ops_app.tenancy.scoping import organization_of

CHECK_LABELS = {"database": "database", "channel_layer": "channel layer", "broker": "broker"}


@never_cache
async def healthz(request: HttpRequest) -> JsonResponse:
    """Which check failed, for anyone (load balancers probe anonymously); what went wrong (hosts,
    ports, exception text) only for staff, since it maps the infrastructure behind the site.
    Answers within about CHECK_TIMEOUT whatever is down (ongrid_site/health.py)."""
    healthy, checks = await run_checks()
    # Who asks is read from the database (the session, the user): only when it answered, so a
    # probe during an outage is not held up by the very dependency it reports as down.
    staff = checks["database"]["ok"] and (await request.auser()).is_staff
    if not staff:
        checks = {name: {"ok": check["ok"]} for name, check in checks.items()}
    failed = [CHECK_LABELS.get(name, name) for name, check in checks.items() if not check["ok"]]
    body = {"status": "ok" if healthy else "unhealthy", "failed": failed, "checks": checks}
    return JsonResponse(body, status=200 if healthy else 503)


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Members land in their chats; someone with no organization gets the explanation page."""
    if organization_of(request.user) is None:
        return render(request, "home.html")
    return redirect("chat-home")


def locked_out(request: HttpRequest, response: HttpResponse | None = None, credentials=None) -> HttpResponse:
    """django-axes' answer to a locked-out username + address: the login page, saying why (429)."""
    minutes = round(settings.AXES_COOLOFF_TIME.total_seconds() / 60)
    context = {"form": AuthenticationForm(request), "locked_out_minutes": minutes, "next": ""}
    return render(request, "registration/login.html", context, status=429)
