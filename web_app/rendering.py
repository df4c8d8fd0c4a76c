"""Turning agent text into safe HTML. The model's Markdown is rendered, then sanitised with an
allowlist (nh3): links and code survive, scripts, event handlers and styles never do."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import markdown
import nh3
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from ops_app.models import Device

ALLOWED_TAGS = {
    "p",
    "br",
    "hr",
    "strong",
    "em",
    "b",
    "i",
    "code",
    "pre",
    "blockquote",
    "ul",
    "ol",
    "li",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "a",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "del",
    "span",
}
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "class"},
    "code": {"class"},
    "span": {"class"},
    "th": {"align"},
    "td": {"align"},
}


def render_markdown(text: str) -> SafeString:
    html = markdown.markdown(
        text or "", extensions=["fenced_code", "tables", "sane_lists"], output_format="html"
    )
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
    )
    return mark_safe(clean)  # noqa: S308 - sanitised by nh3 just above


# Incident references an answer may hold: "incident #12" or "INC-12". A bare number ("a 502", "port
# 443") is never an incident: only these two spellings link.
INCIDENT_REF = re.compile(r"\b(?:incident\s+#(?P<a>\d+)|INC-(?P<b>\d+))\b", re.IGNORECASE)
_TAG = re.compile(r"(<[^>]*>)")


def incident_url(incident_id: int | str) -> str:
    """The incident page (built in its own app; linked by path so this module does not depend on it)."""
    return f"/incidents/{incident_id}/"


@dataclass(frozen=True)
class EstateLinks:
    """What a viewer may follow from rendered text: device name -> page. Empty without a viewer,
    so names stay plain text (an IM message, a mail)."""

    devices: dict[str, str] = field(default_factory=dict)


def estate_links(organization_id: int | None, viewer) -> EstateLinks:
    """The device links for `viewer` inside one organization: each device's own read-only page,
    which every signed-in person of the organization may open (its admin form is a link from it)."""
    if organization_id is None or viewer is None or not getattr(viewer, "is_authenticated", False):
        return EstateLinks()
    rows = Device.objects.filter(organization_id=organization_id).values_list("pk", "name")
    devices = {name: reverse("device-page", args=[pk]) for pk, name in rows if name}
    return EstateLinks(devices)


def linkify(html: str, links: EstateLinks | None = None) -> SafeString:
    """Turn incident references and known device names into links, in the text of already
    sanitised HTML only: tags, attributes and text inside links or code are left as they are."""
    devices = (links or EstateLinks()).devices
    device_ref = None
    if devices:
        names = sorted((escape(n) for n in devices), key=len, reverse=True)
        device_ref = re.compile(r"(?<![\w.-])(" + "|".join(re.escape(n) for n in names) + r")(?![\w-])")
        by_escaped = {escape(n): url for n, url in devices.items()}
    out: list[str] = []
    skip = 0  # depth inside <a>, <code> or <pre>
    for part in _TAG.split(str(html)):
        if part.startswith("<"):
            name = re.match(r"</?\s*([a-zA-Z0-9]+)", part)
            if name and name.group(1).lower() in ("a", "code", "pre"):
                skip += -1 if part.startswith("</") else 1
                skip = max(skip, 0)
            out.append(part)
            continue
        if skip or not part:
            out.append(part)
            continue
        part = INCIDENT_REF.sub(
            lambda m: (
                f'<a class="ref-incident" href="{incident_url(m.group("a") or m.group("b"))}">'
                f"{m.group(0)}</a>"
            ),
            part,
        )
        if device_ref is not None:
            part = _sub_outside_links(part, device_ref, by_escaped)
        out.append(part)
    return mark_safe("".join(out))  # noqa: S308 - only adds <a> around text of sanitised HTML


def _sub_outside_links(text: str, pattern: re.Pattern, urls: dict[str, str]) -> str:
    pieces = re.split(r"(<a [^>]*>.*?</a>)", text)
    return "".join(
        piece
        if piece.startswith("<a ")
        else pattern.sub(lambda m: f'<a class="ref-device" href="{urls[m.group(1)]}">{m.group(1)}</a>', piece)
        for piece in pieces
    )


def render_answer(text: str, links: EstateLinks | None = None) -> SafeString:
    """An agent's Markdown as safe HTML with incident and device references linked."""
    return linkify(render_markdown(text), links)
