"""Feishu's event subscription URL: the challenge, messages, and card button presses
(`card.action.trigger`, whose answer is the toast the presser sees)."""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from im_app import background, deliveries
from im_app.models import IMApp, Platform
from im_app.platforms.feishu import inbound
from im_app.views import enabled_app

log = logging.getLogger(__name__)


@csrf_exempt
@require_POST
async def events(request: HttpRequest, app_id: int) -> HttpResponse:
    app = await enabled_app(app_id, Platform.FEISHU)
    payload = inbound.payload_of(app, request.body, request.headers)
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
        return JsonResponse({"toast": {"type": "info", "content": await _pressed(app, event, event_id)}})
    if kind == "im.message.receive_v1":
        background.run_after_answer(inbound.handle_event(app, event), f"feishu-{event_id}")
    return JsonResponse({"code": 0})


async def _pressed(app: IMApp, event: dict, event_id: str) -> str:
    """A card button: the toast for the presser now, the decided card redrawn after the answer."""
    toast, proposal = await inbound.press(app, event)
    _verb, _target, presser, message_id = inbound.button_of(event)
    if proposal is not None and message_id:
        background.run_after_answer(
            inbound.update_decided_card(app, message_id, proposal, presser), f"feishu-card-{event_id}"
        )
    return toast


urlpatterns = [path("im/feishu/<int:app_id>/events", events, name="im-feishu-events")]
