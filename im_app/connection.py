"""The admin's "Test connection": call the platform's auth endpoint with the stored credentials
(the client's `identity`: Slack auth.test, Telegram getMe, Feishu tenant_access_token/internal)
and remember the bot identity it reports. An outbound-only app also has its outbound connection
tried when its platform has a check for it (Slack's app-level token for Socket Mode)."""

from __future__ import annotations

from asgiref.sync import async_to_sync

from im_app.models import ConnectionMode, IMApp
from im_app.platforms.http import PlatformError
from im_app.platforms.registry import PLATFORMS


def test_connection(app: IMApp) -> tuple[bool, str]:
    """(ok, the bot identity or the platform's refusal). Never includes a credential."""
    platform = PLATFORMS[app.platform]
    try:
        identity = async_to_sync(platform.client(app).identity)()
        if platform.outbound_check is not None and app.connection_mode == ConnectionMode.POLLING:
            try:
                identity = f"{identity}, {async_to_sync(platform.outbound_check)(app)}"
            except PlatformError as exc:
                return False, f"{identity}, but {exc}"
    except PlatformError as exc:
        return False, str(exc)
    except OSError as exc:
        return False, f"cannot reach {app.api_base}: {type(exc).__name__}"
    except Exception as exc:  # noqa: BLE001 - httpx errors and the like, shown to the admin
        return False, f"cannot reach {app.api_base}: {type(exc).__name__}"
    IMApp.objects.filter(pk=app.pk).update(bot_identity=identity[:200])
    return True, identity
