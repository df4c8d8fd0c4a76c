"""What the offline model says it did not do, or did loosely: a requested change it never makes,
and the device names it read as others (`web-1` as `web-01`)."""

from __future__ import annotations

import json
import re

from .phrases import NOT_DONE, READ_AS, phrase
from .reading import DEVICE, Facts, match_device
from .routing import users_words
from .vocabulary import ASKS_TO_ACT, CHANGE_VERBS, QUESTION_OPENERS


def requested_change(request: str) -> str | None:
    """The words asking for a change ("restart nginx on web-1"), or None when the message asks none."""
    tokens = re.findall(r"[\w'-]+", request.lower())
    if tokens and tokens[0] in QUESTION_OPENERS and not ASKS_TO_ACT.search(request):
        return None
    for match in re.finditer(r"[\w'-]+", request):
        if match.group(0).lower() in CHANGE_VERBS:
            clause = re.split(r"[.?!\n;]", request[match.start() :], maxsplit=1)[0]
            return clause.strip()[:160]
    return None


def _known_devices(results: list[tuple[str, str]]) -> list[str]:
    """Device names that tool results mention (a device list, a specialist's report)."""
    names: list[str] = []
    for _, content in results:
        try:
            data = json.loads(content)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("devices"), list):
            names.extend(str(d.get("name")) for d in data["devices"] if isinstance(d, dict) and d.get("name"))
        names.extend(DEVICE.findall(content))
    return list(dict.fromkeys(names))


def device_readings(request: str, results: list[tuple[str, str]]) -> dict[str, str]:
    """Devices the request names loosely (`web-1`) → the known device they mean (`web-01`)."""
    mentioned = Facts.of(request).devices
    known = [name for name in _known_devices(results) if name not in mentioned]
    readings = {}
    for asked in mentioned:
        found = match_device(asked, known)
        if found is not None and found != asked:
            readings[asked] = found
    return readings


def with_devices(text: str, readings: dict[str, str]) -> str:
    """`text` with each loosely named device replaced by the device it means."""
    for asked, found in readings.items():
        text = re.sub(rf"(?<![\w-]){re.escape(asked)}(?![\w-])", found, text)
    return text


def led_answer(text: str, request: str, readings: dict[str, str], language: str, coordinator: bool) -> str:
    """A final answer led by what a worker read loosely (`web-1` as `web-01`) or — from the
    coordinator, who speaks to the user — by a plain statement that a requested change was not made
    (with the device names as the specialist resolved them)."""
    lead = [] if coordinator else [phrase(language, READ_AS, asked=a, found=f) for a, f in readings.items()]
    change = requested_change(users_words(request)) if coordinator else None
    if change:
        lead.insert(0, phrase(language, NOT_DONE, action=with_devices(change, readings)))
    return "\n\n".join([*lead, text]) if lead else text
