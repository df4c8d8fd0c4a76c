"""The admin's "Test connection": call the platform's auth endpoint with the stored credentials
and remember the bot identity it reports (Slack auth.test, Telegram getMe, Feishu
tenant_access_token/internal). A Slack app in Socket Mode also has its app-level token tried
(`apps.connections.open`; the one-time URL it answers is simply not used)."""

from __future__ import annotations

from asgiref.sync import async_to_sync

from im_app.models import ConnectionMode, IMApp, Platform
from im_app.platforms.feishu import FeishuClient
from im_app.platforms.http import PlatformError
from im_app.platforms.slack import SlackClient, socket_mode_url
from im_app.platforms.telegram import TelegramClient

CLIENTS = {Platform.SLACK: SlackClient, Platform.TELEGRAM: TelegramClient, Platform.FEISHU: FeishuClient}


def test_connection(app: IMApp) -> tuple[bool, str]:
    """(ok, the bot identity or the platform's refusal). Never includes a credential."""
    try:
        identity = async_to_sync(CLIENTS[app.platform](app).identity)()
        if app.platform == Platform.SLACK and app.connection_mode == ConnectionMode.POLLING:
            try:
                async_to_sync(socket_mode_url)(app)
            except PlatformError as exc:
                return False, f"{identity}, but Socket Mode refused the app-level token: {exc}"
            identity = f"{identity}, Socket Mode ready"
    except PlatformError as exc:
        return False, str(exc)
    except OSError as exc:
        return False, f"cannot reach {app.api_base}: {type(exc).__name__}"
    except Exception as exc:  # noqa: BLE001 - httpx errors and the like, shown to the admin
        return False, f"cannot reach {app.api_base}: {type(exc).__name__}"
    IMApp.objects.filter(pk=app.pk).update(bot_identity=identity[:200])
    return True, identity
