"""Investigation summaries in the team chat: when an investigation ends, each enabled chat app of
its organization that names a summary channel gets a short summary with a link to the incident.

The signal is `chat_app.signals.investigation_finished`, sent by the incidents app: the two apps
are siblings and never import each other, so only its documented keyword arguments
(`organization_id`, `summary`) are read here. A failed post is logged and never reaches the
investigation that finished.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from django.dispatch import receiver

from chat_app.signals import investigation_finished
from im_app.feishu_bridge import FeishuThread
from im_app.identities import public_url
from im_app.models import IMApp, Platform
from im_app.platforms.feishu import FeishuClient
from im_app.platforms.slack import SlackClient
from im_app.platforms.telegram import TelegramClient
from im_app.slack_bridge import SlackThread
from im_app.telegram_bridge import TelegramThread

log = logging.getLogger(__name__)


def summary_markdown(summary: dict) -> str:
    """The message, in the Markdown every platform's renderer converts."""
    incident = summary.get("incident") or {}
    status = summary.get("status") or "finished"
    lines = [
        f"**Investigation {status}: {incident.get('title') or 'incident'}** ({incident.get('severity', '')})"
    ]
    if summary.get("summary"):
        lines.append(str(summary["summary"])[:1500])
    if summary.get("root_cause"):
        lines.append(f"Root cause: {str(summary['root_cause'])[:1000]}")
    if summary.get("confidence_word"):
        lines.append(f"Confidence: {summary['confidence_word']}")
    if summary.get("error"):
        lines.append(f"⚠️ {str(summary['error'])[:500]}")
    return "\n".join(lines)


def channel_thread(app: IMApp, channel: str):
    """A `Thread` that posts at the top level of a channel / chat of this app's platform."""
    if app.platform == Platform.TELEGRAM:
        return TelegramThread(TelegramClient(app), channel)
    if app.platform == Platform.SLACK:
        return SlackThread(SlackClient(app), channel, None)
    return FeishuThread(FeishuClient(app), channel, root="")


async def post_summary(thread, summary: dict) -> None:
    path = (summary.get("incident") or {}).get("path") or ""
    links = [("Incident", public_url(path))] if path else []
    for chunk in thread.final(summary_markdown(summary), links):
        await thread.post(chunk)


@receiver(investigation_finished, dispatch_uid="ongrid-im-investigation-summaries")
def post_summaries(sender, organization_id: int | None = None, summary: dict | None = None, **kwargs) -> None:
    """Post `summary` to every enabled app of the organization that has a summary channel."""
    if organization_id is None or not summary:
        return
    apps = IMApp.objects.filter(organization_id=organization_id, enabled=True).exclude(summary_channel="")
    for app in apps:
        try:
            async_to_sync(post_summary)(channel_thread(app, app.summary_channel.strip()), summary)
        except Exception:  # noqa: BLE001 - a chat outage must not fail the investigation
            log.exception("IM app %s: could not post the investigation summary", app.pk)
