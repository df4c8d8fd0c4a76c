"""Template helpers every page shares: agent text as safe linked HTML, and one way of showing time.

Time: every date on the chat, audit, incident and report pages is written the way the reader's
language writes it (`ongrid_site/formats/<language>/formats.py`: "2026-12-01 19:26" in English,
"1 déc. 2026 19:26" in French, "2026年12月1日 19:26" in Chinese), in the viewer's zone (activated
per request by `web_app.timezones.ViewerTimezoneMiddleware`), with the zone and the full ISO-style
timestamp on hover and in `datetime="…"` for machines. `ago` says "3 min ago" (translated) where
recency matters more than the clock (sidebar, chat messages); the absolute time stays in the
tooltip.
"""

from __future__ import annotations

from datetime import datetime

from django import template
from django.utils import formats, timezone
from django.utils.dateformat import format as date_format
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext, pgettext_lazy

from audit_app.models import TOOL_STATUS_WORDS
from chat_app.channels import channel_choices
from chat_app.models import MessageKind, MessageRole, SessionKind
from web_app.rendering import EstateLinks, estate_links, render_answer

register = template.Library()

FULL = "Y-m-d H:i:s"  # the tooltip: the exact instant, the same in every language


def _local(value: datetime) -> datetime:
    return timezone.localtime(value) if timezone.is_aware(value) else value


def _zone_label(value: datetime) -> str:
    name = timezone.get_current_timezone_name()
    offset = value.strftime("%z")
    return f"{name} (UTC{offset[:3]}:{offset[3:]})" if offset else name


def local_datetime(value: datetime, seconds: bool = False) -> str:
    """`value` in the viewer's zone, written the active language's way (its SHORT_DATETIME_FORMAT);
    `seconds` adds them (24-hour clock in every shipped language)."""
    local = _local(value)
    if seconds:
        return f"{formats.date_format(local, 'SHORT_DATE_FORMAT')} {date_format(local, 'H:i:s')}"
    return formats.date_format(local, "SHORT_DATETIME_FORMAT")


def relative(value: datetime, now: datetime | None = None) -> str:
    """'just now', '3 min ago', '5 h ago', 'yesterday' in the active language, else the local date."""
    now = now or timezone.now()
    seconds = (now - value).total_seconds()
    if seconds < 45:
        return gettext("just now")
    if seconds < 3600:
        minutes = round(seconds / 60) or 1
        return gettext("%(count)d min ago") % {"count": minutes}
    if seconds < 86400:
        hours = int(seconds // 3600)
        return gettext("%(count)d h ago") % {"count": hours}
    if seconds < 2 * 86400:
        return gettext("yesterday")
    return local_datetime(value)


def _time_tag(value, text: str) -> SafeString:
    local = _local(value)
    title = f"{date_format(local, FULL)} {_zone_label(local)}"
    return format_html('<time datetime="{}" title="{}">{}</time>', value.isoformat(), title, text)


@register.filter
def when(value, precision: str = "") -> SafeString | str:
    """`{{ row.created_at|when }}` → the local time in the reader's language ("2026-12-01 19:26",
    "1 déc. 2026 19:26"); `|when:"s"` adds seconds."""
    if not isinstance(value, datetime):
        return "—" if value in (None, "") else str(value)
    return _time_tag(value, local_datetime(value, seconds=precision == "s"))


@register.filter
def ago(value) -> SafeString | str:
    """`{{ chat.updated_at|ago }}` → '3 min ago', the full local time and zone on hover."""
    if not isinstance(value, datetime):
        return "—" if value in (None, "") else str(value)
    return _time_tag(value, relative(value))


@register.simple_tag(takes_context=True)
def agent_text(context, text: str, organization_id: int | None = None) -> SafeString:
    """Agent Markdown rendered safely, with incident and (for staff) device names linked."""
    request = context.get("request")
    viewer = getattr(request, "user", None)
    cache = getattr(request, "_ongrid_links", None) if request is not None else None
    if cache is None:
        cache = {}
        if request is not None:
            request._ongrid_links = cache
    if organization_id not in cache:
        cache[organization_id] = estate_links(organization_id, viewer) if organization_id else EstateLinks()
    return render_answer(text or "", cache[organization_id])


# The states a tool call or an agent shows in the chat (audit_app.models.ToolStatus and the
# session statuses), in the reader's words. The value itself stays the CSS class and data-status.
STATUS_LABELS = {
    **TOOL_STATUS_WORDS,
    "pending": pgettext_lazy("agent status", "pending"),
    "running": pgettext_lazy("agent status", "running"),
    "completed": pgettext_lazy("agent status", "completed"),
    "failed": pgettext_lazy("agent status", "failed"),
    "idle": pgettext_lazy("agent status", "idle"),
}


@register.filter
def status_label(value: str) -> str:
    """A status as the reader should see it; an unknown one as it is."""
    label = STATUS_LABELS.get(value)
    return str(label) if label is not None else value


# Stored codes the audit pages show, by what they name: the page shows the label in the reader's
# language; the code itself stays the CSS class, the API's value and the filter's.
CHOICES = {
    "session_kind": lambda: SessionKind.choices,
    "channel": channel_choices,
    "message_role": lambda: MessageRole.choices,
    "message_kind": lambda: MessageKind.choices,
}


@register.filter
def label_of(value: str, what: str) -> str:
    """`{{ node.kind|label_of:"session_kind" }}` → "Worker task"; an unknown code as it is."""
    label = dict(CHOICES[what]()).get(value)
    return str(label) if label is not None else value
