"""Following a pressed change through the review gate for the alert cards: while it is open the
cards are redrawn each time its state moves on (the incident page follows the same progress,
`incidents_app.actions`), so "acknowledged by alice (review gate: …)" is right on the card."""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async

from agents_app.api import run_in_background
from incidents_app import actions
from incidents_app.alerting import triggers

log = logging.getLogger(__name__)
POLL = 0.5  # seconds between two looks at the gate's proposal
FOLLOW_FOR = 300.0  # a review still open after this is left for the next redraw


def start(incident_id: int) -> None:
    run_in_background(follow(incident_id))


async def follow(incident_id: int) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FOLLOW_FOR
    drawn = None
    try:
        while loop.time() < deadline:
            state = await sync_to_async(actions.signature)(incident_id)
            if state != drawn:
                drawn = state
                await sync_to_async(triggers.card_changed)(incident_id)
            if not await sync_to_async(actions.any_open)(incident_id):
                return
            await asyncio.sleep(POLL)
    except Exception:  # noqa: BLE001 - the card is only a view; the change itself goes on
        log.exception("incident %s: could not follow the pressed change for its cards", incident_id)
