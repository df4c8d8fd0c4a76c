"""Alert cards in the team chat (docs/im.md, "Alert cards"): when an alert fires the incidents app
asks for a card in an IM app's channel, redraws it as the investigation's findings, its report and
people's actions arrive, and hears about the card's buttons from here.

The signals are `chat_app.signals.alert_card_post` and `alert_card_update`, received here (the
buttons' `alert_card_pressed` is sent from `im_app.alert_presses`); the incidents app is a
sibling of this one, so neither imports the other and only the signals' documented keyword
arguments are read.

A card is written in its app's reply language (`thread_language`, with no sender: a channel has
many readers), in the platform's markup through its thread, so everything the alert's source or
the agents wrote is escaped as in every other message. A post or an edit that fails raises
`AlertCardError` with a reason safe to store and show (an HTTP status, an error class, a
platform's error code, never its text): the sender keeps the delivery and retries it.
"""

from __future__ import annotations

import logging

from django.dispatch import receiver
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from chat_app.signals import alert_card_post, alert_card_update
from im_app.alert_presses import VERB_PREFIX, VERBS
from im_app.delivery import FAILURES, failure_reason
from im_app.languages import thread_language
from im_app.markup import Emitter, render
from im_app.models import IMApp
from im_app.platforms.http import PlatformError
from im_app.platforms.registry import PLATFORMS
from im_app.thread import Buttons, PlatformThread
from ops_app.core.text import cut_at_word
from ops_app.core.timeutil import TimeParseError, parse_time
from ops_app.models import Incident, Severity

log = logging.getLogger(__name__)

SEVERITY_MARK = {"critical": "🔴", "high": "🟠", "warning": "🟡", "info": "🔵"}
LOG_LINES = 5  # the newest entries of "who did what" a card shows

# Characters of the longest texts a card carries (the title, the findings, the report's summary
# and root cause), scaled down until the card fits the platform's message limit.
LIMITS = {"title": 250, "findings": 1200, "summary": 700, "root_cause": 400, "services": 300, "log": 200}
BUDGETS = (1.0, 0.5, 0.25, 0.1)


class AlertCardError(Exception):
    """Why a card was not posted or updated, in words safe to keep on a delivery row and show an
    admin (never a credential, never the platform's own text)."""


# --- the card ----------------------------------------------------------------------------------


def button_label(verb: str) -> str:
    return {
        "acknowledge": _("Acknowledge"),
        "investigate": _("Investigate now"),
        "silence": _("Silence 1 h"),
    }[verb]


def card_buttons(card: dict) -> Buttons | None:
    """The buttons still offered (`card["buttons"]`), in a fixed order, with the data
    `im:alert-<verb>:<incident id>`; None when none is (a sent test, a resolved incident)."""
    offered = set(card.get("buttons") or [])
    incident = card.get("incident")
    if not offered or not str(incident or "").isdigit():
        return None
    return [(button_label(verb), f"im:{VERB_PREFIX}{verb}:{incident}") for verb in VERBS if verb in offered]


def render_card(thread: PlatformThread, card: dict) -> tuple[str, Buttons | None]:
    """The card in the thread's markup and its buttons, in the active language; its long parts
    shortened until it fits one message of the platform."""
    for budget in BUDGETS:
        rendered = card_text(thread, card, budget)
        if len(rendered) <= thread.max_text:
            break
    return rendered, card_buttons(card)


def card_text(thread: PlatformThread, card: dict, budget: float = 1.0) -> str:
    """Headline, facts, the investigation's findings and report, who did what, then the links."""

    def cut(key: str, text: object) -> str:
        return cut_at_word(str(text or "").strip(), max(40, int(LIMITS[key] * budget)))

    markup = thread.markup
    severity = str(card.get("severity") or "")
    title = cut("title", card.get("title") or _("Alert"))
    facts = [label_of(Severity, severity), label_of(Incident.Status, str(card.get("status") or ""))]
    blocks = [
        f"{SEVERITY_MARK.get(severity, '⚪')} {markup.bold(title)}",
        "\n".join(_fact_lines(thread, card, " · ".join(fact for fact in facts if fact), cut)),
    ]
    if card.get("findings"):
        findings = render(cut("findings", card["findings"]), markup)
        blocks.append(f"{markup.bold(_('First findings'))}\n{findings}")
    report = card.get("report") or {}
    if isinstance(report, dict) and any(report.get(key) for key in ("summary", "root_cause")):
        blocks.append(_report_block(markup, report, cut))
    entries = [str(entry) for entry in card.get("log") or [] if str(entry).strip()][-LOG_LINES:]
    if entries:
        blocks.append("\n".join(markup.text(f"• {cut('log', entry)}") for entry in entries))
    links = card_links(card)
    if links:
        blocks.append(" · ".join(markup.link(label, url) for label, url in links))
    return "\n\n".join(block for block in blocks if block)


def _fact_lines(thread: PlatformThread, card: dict, facts: str, cut) -> list[str]:
    markup = thread.markup
    lines = [markup.text(facts)] if facts else []
    services = [str(service) for service in card.get("services") or [] if str(service).strip()]
    if services:
        listed = cut("services", ", ".join(services))
        lines.append(markup.text(_("Services: %(services)s") % {"services": listed}))
    started = _time(card.get("started_at"))
    if started is not None:
        # Split around the placeholder: the time is markup of its own (Slack's date token).
        before, _sep, after = (_("Started: %(time)s") % {"time": "\0"}).partition("\0")
        lines.append(f"{markup.text(before)}{thread.moment(started)}{markup.text(after)}")
    if card.get("source"):
        lines.append(markup.text(_("Source: %(source)s") % {"source": source_name(str(card["source"]))}))
    return lines


def _report_block(markup: Emitter, report: dict, cut) -> str:
    lines = [markup.bold(_("Report"))]
    if report.get("summary"):
        lines.append(render(cut("summary", report["summary"]), markup))
    if report.get("root_cause"):
        cause = cut("root_cause", report["root_cause"])
        lines.append(markup.text(_("Root cause: %(cause)s") % {"cause": cause}))
    if report.get("confidence_word"):
        word = confidence(str(report["confidence_word"]))
        lines.append(markup.text(_("Confidence: %(word)s") % {"word": word}))
    return "\n".join(lines)


def card_links(card: dict) -> list[tuple[str, str]]:
    """The incident page, then the incident in its source ("Open in PagerDuty"), when known."""
    links = []
    if _web_url(card.get("url")):
        links.append((_("Incident"), str(card["url"])))
    if _web_url(card.get("source_url")):
        name = source_name(str(card.get("source") or "")) or _("the source")
        links.append((_("Open in %(source)s") % {"source": name}, str(card["source_url"])))
    return links


def _web_url(value: object) -> bool:
    return isinstance(value, str) and value.startswith(("https://", "http://"))


def _time(value: object):
    try:
        return parse_time(value) if isinstance(value, str) and value else None
    except TimeParseError:
        return None


def label_of(choices, value: str) -> str:
    """A stored choice as a reader reads it (its translated label); unknown values as sent."""
    return str(choices(value).label) if value in choices.values else value


def source_name(kind: str) -> str:
    """The source's product name (PagerDuty, Opsgenie, Grafana Alerting, Generic webhook)."""
    if kind == "generic":
        kind = Incident.Source.WEBHOOK
    return label_of(Incident.Source, kind)


def confidence(word: str) -> str:
    return {
        "low": pgettext("confidence", "low"),
        "medium": pgettext("confidence", "medium"),
        "high": pgettext("confidence", "high"),
    }.get(word, word)


# --- the receivers -----------------------------------------------------------------------------


async def card_app(organization_id: object, app_id: object) -> IMApp:
    """The enabled IM app `app_id` of organization `organization_id`, or AlertCardError."""
    app = None
    if str(app_id or "").isdigit():
        app = await IMApp.objects.filter(pk=int(app_id)).afirst()
    if app is None or organization_id is None or app.organization_id != organization_id:
        raise AlertCardError(f"IM app {app_id} is not a chat app of organization {organization_id}")
    if not app.enabled:
        raise AlertCardError(f"IM app {app.pk} is disabled")
    return app


def _failed(app: IMApp, what: str, exc: BaseException) -> AlertCardError:
    reason = exc.safe_reason() if isinstance(exc, PlatformError) else failure_reason(exc)
    log.warning("IM app %s: could not %s the alert card (%s)", app.pk, what, reason)
    return AlertCardError(f"IM app {app.pk} ({app.platform}): could not {what} the alert card: {reason}")


@receiver(alert_card_post, dispatch_uid="ongrid-im-alert-card-post")
async def post_alert_card(
    sender,
    organization_id: int | None = None,
    app_id: int | None = None,
    channel: str = "",
    card: dict | None = None,
    **kwargs,
) -> dict:
    """Post a card at the top level of `channel` with the app's platform; its `ref`:
    {"platform", "address" (where: channel / chat ids), "message" (the message's id)}."""
    app = await card_app(organization_id, app_id)
    channel = str(channel or "").strip()
    if not channel:
        raise AlertCardError(f"IM app {app.pk}: no channel to post the alert card to")
    thread = PLATFORMS[app.platform].channel_thread(app, channel)
    with translation.override(thread_language(app)):
        rendered, buttons = render_card(thread, card or {})
    try:
        posted = await thread.post_card(rendered, buttons)
    except FAILURES as exc:
        raise _failed(app, "post", exc) from exc
    return {"platform": app.platform, **posted}


@receiver(alert_card_update, dispatch_uid="ongrid-im-alert-card-update")
async def update_alert_card(
    sender,
    organization_id: int | None = None,
    app_id: int | None = None,
    ref: dict | None = None,
    card: dict | None = None,
    **kwargs,
) -> None:
    """Redraw a posted card in place (the same message, edited), from the `ref` its post returned."""
    app = await card_app(organization_id, app_id)
    if not isinstance(ref, dict) or ref.get("platform") != app.platform or "message" not in ref:
        raise AlertCardError(f"IM app {app.pk}: not a reference to one of its cards")
    try:
        thread = PLATFORMS[app.platform].thread.at(app, ref.get("address") or {})
    except (KeyError, TypeError):
        raise AlertCardError(f"IM app {app.pk}: not a reference to one of its cards") from None
    with translation.override(thread_language(app)):
        rendered, buttons = render_card(thread, card or {})
    try:
        await thread.edit(ref["message"], rendered, buttons)
    except FAILURES as exc:
        raise _failed(app, "update", exc) from exc
