"""A Telegram bot's setup: the webhook URL to register with setWebhook and the updates it needs."""

from __future__ import annotations

from django.urls import reverse
from django.utils.translation import gettext

from im_app.models import ConnectionMode, IMApp
from im_app.platforms.setup import Address, Checklist, Setup, absolute

ALLOWED_UPDATES = ("message", "callback_query")  # messages, and the Approve / Reject / Stop buttons


def guide(app: IMApp) -> Setup:
    updates = Checklist(gettext("Allowed updates (setWebhook allowed_updates)"), ALLOWED_UPDATES)
    if app.connection_mode == ConnectionMode.POLLING:
        return Setup(
            checklists=(updates,),
            note=gettext(
                "Long polling: Telegram calls no URL; manage.py ongrid_im asks Telegram for updates "
                "(delete any webhook first: deleteWebhook)."
            ),
        )
    if app.pk is None:
        return Setup(checklists=(updates,))
    url = absolute(reverse("im-telegram-webhook", args=[app.pk, app.webhook_path]))
    return Setup(
        addresses=(Address(gettext("Webhook URL (setWebhook url)"), url),),
        checklists=(updates,),
        note=gettext("Register it with setWebhook, giving the webhook secret as secret_token."),
    )
