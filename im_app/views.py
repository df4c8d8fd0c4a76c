"""Inbound HTTP: the platforms' webhooks (verify, de-duplicate, answer, then work) and the page
where a user confirms the link between their IM account and Ongrid. Thin: the checks live in
`verification`, the work in the platform bridges."""

from __future__ import annotations

import json
import logging

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from im_app import (
    background,
    deliveries,
    feishu_bridge,
    identities,
    slack_bridge,
    telegram_bridge,
    verification,
)
from im_app.models import IMApp, Platform

log = logging.getLogger(__name__)


async def _app(app_id: int, platform: str, **extra) -> IMApp:
    app = await IMApp.objects.filter(pk=app_id, platform=platform, enabled=True, **extra).afirst()
    if app is None:
        raise Http404(_("No such chat app."))
    return app


@csrf_exempt
@require_POST
async def telegram_webhook(request: HttpRequest, app_id: int, path: str) -> HttpResponse:
    app = await _app(app_id, Platform.TELEGRAM, webhook_path=path)
    if not verification.telegram_secret_ok(app, request.headers.get("X-Telegram-Bot-Api-Secret-Token", "")):
        log.warning("IM app %s: Telegram webhook with a wrong secret token", app.pk)
        return JsonResponse({"error": "wrong secret token"}, status=403)
    try:
        update = json.loads(request.body)
        update_id = int(update["update_id"])
    except (ValueError, KeyError, TypeError):
        return JsonResponse({"error": "not a Telegram update"}, status=400)
    if not await deliveries.afirst_time(app, f"update:{update_id}"):
        return JsonResponse({"ok": True, "duplicate": True})
    background.run_after_answer(telegram_bridge.handle_update(app, update), f"telegram-{app.pk}-{update_id}")
    return JsonResponse({"ok": True})


async def _verified_slack(request: HttpRequest, app_id: int) -> IMApp | HttpResponse:
    app = await _app(app_id, Platform.SLACK)
    ok = verification.slack_signature_ok(
        app,
        request.headers.get("X-Slack-Request-Timestamp", ""),
        request.body,
        request.headers.get("X-Slack-Signature", ""),
    )
    if not ok:
        log.warning("IM app %s: Slack request with a bad signature or a stale timestamp", app.pk)
        return JsonResponse({"error": "invalid signature"}, status=401)
    return app


@csrf_exempt
@require_POST
async def slack_events(request: HttpRequest, app_id: int) -> HttpResponse:
    app = await _verified_slack(request, app_id)
    if isinstance(app, HttpResponse):
        return app
    try:
        body = json.loads(request.body)
    except ValueError:
        return JsonResponse({"error": "not JSON"}, status=400)
    if body.get("type") == "url_verification":
        return JsonResponse({"challenge": body.get("challenge", "")})
    if not await slack_bridge.accept_event(app, body):
        return JsonResponse({"ok": True, "duplicate": True})
    return JsonResponse({"ok": True})


@csrf_exempt
@require_POST
async def slack_interactions(request: HttpRequest, app_id: int) -> HttpResponse:
    app = await _verified_slack(request, app_id)
    if isinstance(app, HttpResponse):
        return app
    try:
        payload = json.loads(request.POST.get("payload", ""))
    except ValueError:
        return JsonResponse({"error": "no payload"}, status=400)
    slack_bridge.accept_interaction(app, payload)
    return HttpResponse(status=200)


@csrf_exempt
@require_POST
async def slack_commands(request: HttpRequest, app_id: int) -> HttpResponse:
    """Slack's slash-command URL (form-encoded, signed like every Slack request): `/new`."""
    app = await _verified_slack(request, app_id)
    if isinstance(app, HttpResponse):
        return app
    form = {key: request.POST.get(key, "") for key in request.POST}
    if form.get("command") == "/new" and not await slack_bridge.accept_command(app, form):
        return HttpResponse(status=200)  # a redelivery
    return JsonResponse({"response_type": "ephemeral", "text": await slack_bridge.acommand_answer(app, form)})


@csrf_exempt
@require_POST
async def feishu_events(request: HttpRequest, app_id: int) -> HttpResponse:
    """Feishu's event subscription URL: the challenge, messages, and card button presses
    (`card.action.trigger`, whose answer is the toast the presser sees)."""
    app = await _app(app_id, Platform.FEISHU)
    payload = verification.feishu_payload(app, request.body, request.headers)
    if payload is None:
        log.warning("IM app %s: Feishu request with a wrong token, key or signature", app.pk)
        return JsonResponse({"error": "invalid verification token"}, status=403)
    if payload.get("type") == "url_verification":
        return JsonResponse({"challenge": payload.get("challenge", "")})
    header = payload.get("header") or {}
    event_id = header.get("event_id") or payload.get("uuid") or ""
    if not event_id:
        return JsonResponse({"error": "no event id"}, status=400)
    if not await deliveries.afirst_time(app, f"event:{event_id}"):
        return JsonResponse({"code": 0, "duplicate": True})
    event = payload.get("event") or {}
    kind = header.get("event_type", "")
    if kind == "card.action.trigger":
        toast, proposal = await feishu_bridge.press(app, event)
        message_id = feishu_bridge.button_of(event)[3]
        if proposal is not None and message_id:
            background.run_after_answer(
                feishu_bridge.update_decided_card(
                    app, message_id, proposal, feishu_bridge.button_of(event)[2]
                ),
                f"feishu-card-{event_id}",
            )
        return JsonResponse({"toast": {"type": "info", "content": toast}})
    if kind == "im.message.receive_v1":
        background.run_after_answer(feishu_bridge.handle_event(app, event), f"feishu-{event_id}")
    return JsonResponse({"code": 0})


@login_required
def link_account(request: HttpRequest, code: str) -> HttpResponse:
    """Confirm once, signed in, that this IM account is you (a GET only shows what would happen)."""
    identity = identities.pending_identity(code, request.user)
    if identity is None:
        return render(request, "im/link.html", {"invalid": True}, status=404)
    if request.method == "POST":
        identities.confirm_link(code, request.user)
        return render(request, "im/link.html", {"identity": identity, "linked": True})
    return render(request, "im/link.html", {"identity": identity})
