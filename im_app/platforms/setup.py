"""What an admin sets on the platform's side for one IM app: the addresses the platform calls,
the scopes and events to grant, and (Slack) an app manifest to paste. Each platform package has a
`setup.py` whose `guide(app)` answers one `Setup`; the admin form renders it (im_app/admin.py).

Addresses are absolute when `ONGRID_PUBLIC_URL` is set (the platform needs a URL it can reach,
not a path); without it they stay paths and `public_url_missing` says so, because the default
(the local server) is an address no platform can call."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.conf import settings


@dataclass(frozen=True)
class Address:
    label: str  # what the platform calls it ("Request URL", "Webhook URL", ...)
    url: str  # absolute when ONGRID_PUBLIC_URL is set, else the path


@dataclass(frozen=True)
class Checklist:
    heading: str  # "Bot token scopes", "Bot events", ...
    items: tuple[str, ...]


@dataclass(frozen=True)
class Setup:
    addresses: tuple[Address, ...] = ()
    checklists: tuple[Checklist, ...] = ()
    manifest: str = ""  # ready to paste (Slack); empty for platforms without one
    note: str = ""  # e.g. why there is no address in an outbound-only mode
    public_url_missing: bool = field(default_factory=lambda: not settings.CONFIG.public_url_set)


def absolute(path: str) -> str:
    """`path` under ONGRID_PUBLIC_URL, or the path itself while it is not set."""
    if not settings.CONFIG.public_url_set:
        return path
    return settings.CONFIG.public_url.rstrip("/") + path
