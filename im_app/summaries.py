"""Summaries in the team chat: when an investigation ends, or a schedule with IM delivery has its
finding or report, each enabled IM app of the organization that names a summary channel gets a
short summary with a link to the incident, run or report page.

The signals are `chat_app.signals.investigation_finished` (sent by the incidents app) and
`chat_app.signals.schedule_delivered` (sent by the schedules app): those apps are siblings of this
one and never import it, nor it them, so only the signals' documented keyword arguments are read
here. A failed post is logged and never reaches the investigation or run that sent it.

Each app's post is written in that app's reply language (`im_app.languages.thread_language`, with
no sender: English when the app has none): the fixed words and links; what the agents or the
schedule's owner wrote stays as written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from asgiref.sync import async_to_sync
from django.dispatch import receiver
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from chat_app.signals import investigation_finished, schedule_delivered
from im_app.identities import public_url
from im_app.languages import thread_language
from im_app.models import IMApp
from im_app.platforms.registry import PLATFORMS
from im_app.thread import Thread

log = logging.getLogger(__name__)


def summary_markdown(summary: dict) -> str:
    """The message, in the Markdown every platform's renderer converts."""
    incident = summary.get("incident") or {}
    title = incident.get("title") or _("incident")
    lines = [f"**{_headline(summary.get('status') or '', title)}** ({incident.get('severity', '')})"]
    if summary.get("summary"):
        lines.append(str(summary["summary"])[:1500])
    if summary.get("root_cause"):
        lines.append(_("Root cause: %(cause)s") % {"cause": str(summary["root_cause"])[:1000]})
    if summary.get("confidence_word"):
        word = str(summary["confidence_word"])
        confidence = {
            "low": pgettext("confidence", "low"),
            "medium": pgettext("confidence", "medium"),
            "high": pgettext("confidence", "high"),
        }.get(word, word)
        lines.append(_("Confidence: %(word)s") % {"word": confidence})
    if summary.get("error"):
        lines.append(f"⚠️ {str(summary['error'])[:500]}")
    return "\n".join(lines)


def _headline(status: str, title: str) -> str:
    """The summary's first line, one sentence per end state (so a translation may agree its words)."""
    headlines = {
        "done": _("Investigation done: %(title)s"),
        "inconclusive": _("Investigation inconclusive: %(title)s"),
        "failed": _("Investigation failed: %(title)s"),
        "stopped": _("Investigation stopped: %(title)s"),
        "": _("Investigation finished: %(title)s"),
    }
    if status in headlines:
        return headlines[status] % {"title": title}
    return _("Investigation %(status)s: %(title)s") % {"status": status, "title": title}


# What one app posts, composed in the active language: (Markdown, [(link label, URL)]).
Compose = Callable[[], tuple[str, list[tuple[str, str]]]]


def channel_thread(app: IMApp, channel: str) -> Thread:
    """A `Thread` that posts at the top level of a channel / chat of this app's platform."""
    return PLATFORMS[app.platform].channel_thread(app, channel)


async def post_message(thread: Thread, markdown: str, links: list[tuple[str, str]]) -> None:
    for chunk in thread.final(markdown, links):
        await thread.post(chunk)


def post_to_summary_channels(organization_id: int, compose: Compose, what: str) -> tuple[int, int]:
    """Post to every enabled app of the organization that has a summary channel: (posted, apps).

    Apps are served in name order, one after another, each with the message `compose` writes in
    the app's language; a failure is logged (naming the app and `what`, never a credential) and
    the next app is still served.
    """
    apps = IMApp.objects.filter(organization_id=organization_id, enabled=True).exclude(summary_channel="")
    posted, total = 0, 0
    for app in apps:
        total += 1
        try:
            with translation.override(thread_language(app)):
                markdown, links = compose()
                async_to_sync(post_message)(channel_thread(app, app.summary_channel.strip()), markdown, links)
            posted += 1
        except Exception:  # noqa: BLE001 - a chat outage must not fail what sent the summary
            log.exception("IM app %s: could not post the %s", app.pk, what)
    return posted, total


@receiver(investigation_finished, dispatch_uid="ongrid-im-investigation-summaries")
def post_summaries(sender, organization_id: int | None = None, summary: dict | None = None, **kwargs) -> None:
    """Post `summary` to every enabled app of the organization that has a summary channel."""
    if organization_id is None or not summary:
        return
    path = (summary.get("incident") or {}).get("path") or ""

    def compose() -> tuple[str, list[tuple[str, str]]]:
        links = [(_("Incident"), public_url(path))] if path else []
        return summary_markdown(summary), links

    post_to_summary_channels(organization_id, compose, "investigation summary")


STATUS_MARK = {"ok": "✅", "warning": "⚠️", "problem": "🚨"}


def schedule_markdown(title: str, status: str, markdown: str) -> str:
    """A schedule's output as one chat message: a bold title line, then the sender's summary."""
    mark = STATUS_MARK.get(status, "📊" if status == "report" else "")
    head = f"{mark} **{title}**".strip()
    return f"{head}\n{markdown.strip()}" if markdown.strip() else head


@receiver(schedule_delivered, dispatch_uid="ongrid-im-schedule-output")
def post_schedule_output(
    sender,
    organization_id: int | None = None,
    kind: str = "",
    title: str = "",
    markdown: str = "",
    url: str = "",
    status: str = "",
    compose: Callable[[], tuple[str, str]] | None = None,
    **kwargs,
) -> str:
    """Post a schedule's finding or report to the organization's summary channels; the outcome
    the run keeps ("posted to 2 channel(s)", in English like every stored outcome). `compose`,
    when the sender gives it, writes (title, markdown) in the active language: each app's copy is
    then in that app's language."""
    if organization_id is None:
        return "no organization"

    def compose_post() -> tuple[str, list[tuple[str, str]]]:
        local_title, local_markdown = compose() if compose is not None else (title, markdown)
        links = [(_("Report") if kind == "report" else _("Run"), url)] if url else []
        return schedule_markdown(local_title, status, local_markdown), links

    posted, total = post_to_summary_channels(organization_id, compose_post, f"{kind or 'schedule'} output")
    if posted < total:
        return f"posted to {posted} of {total} channel(s); see the server log"
    return f"posted to {posted} channel(s)"
