"""An alert card's buttons pressed in the team chat (docs/im.md, "Alert cards"): who pressed,
and `chat_app.signals.alert_card_pressed` for the incidents app, which acts and answers.

Apart from the cards' rendering (`im_app.alert_cards`) because every platform's inbound handler
calls this, and the platform registry the rendering needs imports those handlers.
"""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async
from django.utils.translation import gettext as _

from chat_app.signals import alert_card_pressed
from im_app import identities
from im_app.identities import Sender
from im_app.models import IMApp

log = logging.getLogger(__name__)

VERBS = ("acknowledge", "investigate", "silence")  # in the order the buttons are shown
VERB_PREFIX = "alert-"  # a card button's verb on the wire: im:alert-<verb>:<incident id>


def is_alert_verb(verb: str) -> bool:
    """A card button's verb as it comes back from the platform (`alert-acknowledge`, …)."""
    return verb.removeprefix(VERB_PREFIX) in VERBS and verb.startswith(VERB_PREFIX)


def _presser(app: IMApp, external_user_id: str, chat_id: str) -> tuple[object | None, str]:
    """(the linked user, "") or (None, what to tell them): an allowed but unlinked presser gets a
    one-time link, as an unlinked sender does (docs/im.md, "Linking senders")."""
    user = identities.linked_user(app, external_user_id)
    if user is not None:
        return user, ""
    verdict = identities.resolve(app, Sender(external_id=external_user_id, chat_id=chat_id))
    if not verdict.allowed:
        return None, _("This bot does not take requests from you.")
    return None, _("Link your Ongrid account once, signed in, at %(url)s, then try again.") % {
        "url": verdict.link_url
    }


async def apress(app: IMApp, external_user_id: str, verb: str, incident_id: int, chat_id: str = "") -> str:
    """A card button pressed by `external_user_id` (a platform user id of `app`): what to tell
    them, in the active language (the caller's: the presser's thread language).

    Only a linked user's press goes on, as `alert_card_pressed` with the app's organization; the
    incidents app's receiver acts (or refuses) and answers, and redraws the card itself."""
    user, refusal = await sync_to_async(_presser)(app, external_user_id, chat_id)
    if user is None:
        return refusal
    answers = await alert_card_pressed.asend_robust(
        sender=IMApp,
        organization_id=app.organization_id,
        incident_id=incident_id,
        verb=verb.removeprefix(VERB_PREFIX),
        user=user,
        via=app.platform,
    )
    for handler, answer in answers:
        if isinstance(answer, BaseException):
            log.error("IM app %s: alert button %s failed in %r", app.pk, verb, handler, exc_info=answer)
    said = [str(answer) for _handler, answer in answers if isinstance(answer, str) and answer.strip()]
    if said:
        return " ".join(said)
    if any(isinstance(answer, BaseException) for _handler, answer in answers):
        return _("That did not work this time; try again, or use the incident page.")
    return _("This button is not available here: nothing in Ongrid handles alert buttons.")
