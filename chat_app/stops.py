"""A stop reason in the reader's words: below the surfaces, so the chat page and the IM
threads (Slack, Telegram, Feishu) translate the runtime's English stop lines the same way."""

from __future__ import annotations

import re

from django.utils.translation import gettext

_STOP = re.compile(
    r"^stopped(?: by (?P<who>.+?))?"
    r"(?: before the answer was complete\. Cut off: (?P<cut>.*?)\.?)?$",
    re.IGNORECASE | re.DOTALL,
)


def for_viewer(text: str, viewer: str = "") -> str:
    """A stop reason as the person reading it should see it, in their language: "Stopped by you"
    for their own stop. Rows keep the English reason the runtime wrote ("stopped by alice", and
    the note a stopped turn ends with), which the next turn's coordinator also reads; only the
    words shown are translated here."""
    text = (text or "").strip()
    found = _STOP.match(text)
    if found is None:
        return text
    who, cut = found.group("who"), found.group("cut")
    if who and viewer and who.lower() == viewer.lower():
        who = None
        by = gettext("Stopped by you")
    elif who:
        by = gettext("Stopped by %(name)s") % {"name": who}
    else:
        by = gettext("Stopped")
    if cut is None:
        return by
    if cut == "nothing was running":
        cut = gettext("nothing was running")
    return gettext("%(stopped)s before the answer was complete. Cut off: %(cut_off)s.") % {
        "stopped": by,
        "cut_off": cut,
    }
