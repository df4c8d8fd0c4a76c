"""The surface a session came in through (`ChatSession.channel`).

The web, the API and the command line are this layer's own. Surfaces above it start sessions
under values of their own (the IM app stores its platform: "slack", "telegram", "feishu") and
register those values with their labels when their app is ready (`register_channels`), so this
layer names none of them while every list of channels (the admin's column and filter, the audit
filter, the API schema) still shows them.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db import models
from django.utils.translation import gettext_lazy as _


class Channel(models.TextChoices):
    WEB = "web", "Web"
    API = "api", "API"
    CLI = "cli", _("Command line")


_REGISTERED: dict[str, str] = {}  # value -> label, in the order the surfaces registered them


def register_channels(choices: Iterable[tuple[str, str]]) -> None:
    """Add a surface's channel values and their display labels (at its app's `ready`)."""
    for value, label in choices:
        if value not in Channel.values:
            _REGISTERED[value] = label


def channel_choices() -> list[tuple[str, str]]:
    """The choices of `ChatSession.channel`: this layer's own, then the registered ones. Read
    each time (the field's choices are this callable), so registrations made at ready count."""
    return [*Channel.choices, *_REGISTERED.items()]
