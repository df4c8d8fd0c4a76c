"""A Feishu app's setup: the one request URL for events and card callbacks, its scopes and events."""

from __future__ import annotations

from django.urls import reverse
from django.utils.translation import gettext

from im_app.models import IMApp
from im_app.platforms.setup import Address, Checklist, Setup, absolute

SCOPES = ("im:message", "im:message.group_at_msg:readonly", "im:message.p2p_msg:readonly")
EVENTS = ("im.message.receive_v1",)
CALLBACKS = ("card.action.trigger",)


def guide(app: IMApp) -> Setup:
    checklists = (
        Checklist(gettext("Permissions & Scopes"), SCOPES),
        Checklist(gettext("Event subscriptions"), EVENTS),
        Checklist(gettext("Callback subscriptions (same request URL)"), CALLBACKS),
    )
    if app.pk is None:
        return Setup(checklists=checklists)
    url = absolute(reverse("im-feishu-events", args=[app.pk]))
    return Setup(addresses=(Address(gettext("Events & Callbacks: Request URL"), url),), checklists=checklists)
