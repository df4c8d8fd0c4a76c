"""The admin's "Test connection": call the platform's auth endpoint with the stored credentials
(the client's `identity`: Slack auth.test, Telegram getMe, Feishu tenant_access_token/internal)
and remember the bot identity it reports. An outbound-only app also has its outbound connection
tried when its platform has a check for it (Slack's app-level token for Socket Mode).

The calls go out under the egress policy (docs/security.md, "Egress"). What the admin reads is
the bot identity or a short reason: on a refusal, the call and the platform's error code (an
identifier) or HTTP status, never the text of its answer (`PlatformError.safe_reason`); the
identity passes `shown`, so an API base URL pointing at something else than the platform cannot
have its answer read out as markup or a document."""

from __future__ import annotations

import re

from asgiref.sync import async_to_sync

from im_app.models import ConnectionMode, IMApp
from im_app.platforms.http import PlatformError
from im_app.platforms.registry import PLATFORMS
from ops_app.core import outbound

NOT_SHOWN = re.compile(r"[^\w .:@()#,/'+-]")
SHOWN_LENGTH = 120


def shown(text: str) -> str:
    """A platform's words as the admin may see them: short, one line, no markup or structure."""
    return NOT_SHOWN.sub("?", " ".join(str(text).split()))[:SHOWN_LENGTH]


def test_connection(app: IMApp) -> tuple[bool, str]:
    """(ok, the bot identity or why not). Never includes a credential."""
    platform = PLATFORMS[app.platform]
    try:
        identity = shown(async_to_sync(platform.client(app).identity)())
        if platform.outbound_check is not None and app.connection_mode == ConnectionMode.POLLING:
            try:
                identity = f"{identity}, {shown(async_to_sync(platform.outbound_check)(app))}"
            except PlatformError as exc:
                return False, f"{identity}, but {_refusal(exc)}"
    except PlatformError as exc:
        return False, _refusal(exc)
    except Exception as exc:  # noqa: BLE001 - httpx errors and the like, shown to the admin
        return False, f"cannot reach {app.api_base}: {outbound.failure_reason(exc)}"
    IMApp.objects.filter(pk=app.pk).update(bot_identity=identity[:200])
    return True, identity


def _refusal(error: PlatformError) -> str:
    """Why the platform said no, without its words: the call and its error code or HTTP status."""
    return error.safe_reason()
