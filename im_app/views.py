"""The page where a user confirms the link between their IM account and Ongrid, and the lookup
every platform's webhook views (`platforms/<name>/views.py`) start with."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from im_app import identities, redelivery
from im_app.models import IMApp


async def enabled_app(app_id: int, platform: str, **extra) -> IMApp:
    """The enabled IM app a webhook URL names, or 404 (a disabled app's URL answers like none)."""
    app = await IMApp.objects.filter(pk=app_id, platform=platform, enabled=True, **extra).afirst()
    if app is None:
        raise Http404(_("No such chat app."))
    await redelivery.resume_if_pending()  # answers queued before a restart (embedded shape)
    return app


@login_required
def link_account(request: HttpRequest, code: str) -> HttpResponse:
    """Confirm once, signed in, that this IM account is you (a GET only shows what would happen).
    Platform staff are refused: a chat account never acts with their reach across tenants."""
    if request.user.is_superuser:
        return render(request, "im/link.html", {"staff": True}, status=403)
    identity = identities.pending_identity(code, request.user)
    if identity is None:
        return render(request, "im/link.html", {"invalid": True}, status=404)
    if request.method == "POST":
        identities.confirm_link(code, request.user)
        return render(request, "im/link.html", {"identity": identity, "linked": True})
    return render(request, "im/link.html", {"identity": identity})
