"""A Slack app's setup: its Request URLs, the bot scopes and events im_app relies on, and an app
manifest (api.slack.com/apps → Create New App → From an app manifest) with them filled in."""

from __future__ import annotations

import json

from django.urls import reverse
from django.utils.translation import gettext

from im_app.models import ConnectionMode, IMApp
from im_app.platforms.setup import Address, Checklist, Setup, absolute

# What the code calls: chat.postMessage / chat.update / chat.postEphemeral (chat:write), the
# `/new` command (commands), mentions and direct messages (app_mentions:read, im:history,
# im:read), and users.info for the profile e-mail that suggests whom to link (users:read*).
BOT_SCOPES = (
    "app_mentions:read",
    "chat:write",
    "commands",
    "im:history",
    "im:read",
    "users:read",
    "users:read.email",
)
BOT_EVENTS = ("app_mention", "message.im")
APP_TOKEN_SCOPES = ("connections:write",)


def guide(app: IMApp) -> Setup:
    socket_mode = app.connection_mode == ConnectionMode.POLLING
    checklists = [
        Checklist(gettext("Bot token scopes (OAuth & Permissions)"), BOT_SCOPES),
        Checklist(gettext("Bot events (Event Subscriptions)"), BOT_EVENTS),
    ]
    if socket_mode:
        checklists.append(Checklist(gettext("App-level token scopes (Socket Mode)"), APP_TOKEN_SCOPES))
        return Setup(
            checklists=tuple(checklists),
            manifest=manifest(app),
            note=gettext(
                "Socket Mode: Slack calls no URL; manage.py ongrid_im connects to Slack with the "
                "app-level token."
            ),
        )
    return Setup(addresses=addresses(app), checklists=tuple(checklists), manifest=manifest(app))


def addresses(app: IMApp) -> tuple[Address, ...]:
    if app.pk is None:
        return ()
    return (
        Address(
            gettext("Event Subscriptions: Request URL"), absolute(reverse("im-slack-events", args=[app.pk]))
        ),
        Address(
            gettext("Interactivity & Shortcuts: Request URL"),
            absolute(reverse("im-slack-interactions", args=[app.pk])),
        ),
        Address(
            gettext("Slash command /new: Request URL"), absolute(reverse("im-slack-commands", args=[app.pk]))
        ),
    )


def manifest(app: IMApp) -> str:
    """The app manifest as JSON. In webhook mode the Request URLs are the app's (absolute once
    ONGRID_PUBLIC_URL is set); in Socket Mode Slack needs none."""
    socket_mode = app.connection_mode == ConnectionMode.POLLING
    paths = () if socket_mode else addresses(app)
    events_url, interactions_url, commands_url = (a.url for a in paths) if paths else ("", "", "")
    command = {
        "command": "/new",
        "description": gettext("Start a new conversation with Ongrid"),
        "usage_hint": "[question]",
        "should_escape": False,
    }
    events = {"bot_events": list(BOT_EVENTS)}
    interactivity: dict = {"is_enabled": True}
    if not socket_mode:
        command["url"] = commands_url
        events["request_url"] = events_url
        interactivity["request_url"] = interactions_url
    document = {
        "display_information": {"name": (app.name or "Ongrid")[:35]},
        "features": {
            "app_home": {"messages_tab_enabled": True, "messages_tab_read_only_enabled": False},
            "bot_user": {"display_name": (app.name or "Ongrid")[:80], "always_online": True},
            "slash_commands": [command],
        },
        "oauth_config": {"scopes": {"bot": list(BOT_SCOPES)}},
        "settings": {
            "event_subscriptions": events,
            "interactivity": interactivity,
            "org_deploy_enabled": False,
            "socket_mode_enabled": socket_mode,
            "token_rotation_enabled": False,
        },
    }
    return json.dumps(document, indent=2, ensure_ascii=False)
