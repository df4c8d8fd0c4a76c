"""The IM platforms, one row each: what the shared code of `im_app` asks of a platform (the URLs,
the admin, Test connection, summaries and schedule copies, `manage.py ongrid_im`) is read from
here, so none of it names a platform.

Adding a platform (say "matrix"):

1. `im_app/platforms/matrix/`, one module per concern, like the three packages here:
   `client.py` (the HTTP client over `platforms/http.send`, with `identity()` and `MAX_TEXT`),
   `markup.py` (its `im_app.markup.Emitter` and `to_…`), `thread.py` (a `PlatformThread`
   subclass with `post` / `edit`, and `channel_thread`), `inbound.py` (the platform's payloads
   verified and handed to `conversation.converse` / `card_of` / `astop_pressed` / `adecide`),
   `views.py` (the webhook views and their `urlpatterns`), `setup.py` (`guide(app)`: the
   addresses, scopes and events the admin form lists for the platform's side), and, for an
   outbound-only mode, the loop `manage.py ongrid_im` runs (like `telegram/polling.py`).
2. Its row below.
3. The choice `Platform.MATRIX` and its public API base (`DEFAULT_API_BASE`) in
   `im_app/models.py`, then `manage.py makemigrations im_app` (a choices-only AlterField). The
   sessions' channel label comes from that choice (`ImAppConfig.ready`): nothing in `chat_app`.
4. Tests: a `tests/im/test_matrix.py` like `test_telegram.py` against a fake of the platform's
   API in `fakes/`, and the platform's expected column in `tests/im/test_markup.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from django.urls import URLPattern

from im_app.models import IMApp, Platform
from im_app.platforms.feishu import setup as feishu_setup
from im_app.platforms.feishu import thread as feishu_thread
from im_app.platforms.feishu import views as feishu_views
from im_app.platforms.feishu.client import FeishuClient
from im_app.platforms.setup import Setup
from im_app.platforms.slack import setup as slack_setup
from im_app.platforms.slack import socket_mode
from im_app.platforms.slack import thread as slack_thread
from im_app.platforms.slack import views as slack_views
from im_app.platforms.slack.client import SlackClient
from im_app.platforms.telegram import polling
from im_app.platforms.telegram import setup as telegram_setup
from im_app.platforms.telegram import thread as telegram_thread
from im_app.platforms.telegram import views as telegram_views
from im_app.platforms.telegram.client import TelegramClient
from im_app.thread import PlatformThread


class Client(Protocol):
    async def identity(self) -> str:
        """Who the stored credentials authenticate as; raises `PlatformError` with the refusal."""
        ...


@dataclass(frozen=True)
class PlatformPackage:
    """One platform's entry points."""

    client: Callable[[IMApp], Client]  # its API client, for Test connection
    thread: type[PlatformThread]  # its thread: emitter (`markup`) and message limit (`max_text`)
    channel_thread: Callable[[IMApp, str], PlatformThread]  # a channel's top level: summaries
    urls: Sequence[URLPattern]  # its webhook views, under /im/<platform>/
    setup: Callable[[IMApp], Setup]  # what to set on the platform's side, for the admin form
    # The IMApp credential fields this platform reads: the only ones its admin form shows.
    credentials: tuple[str, ...] = ()
    # The loop `manage.py ongrid_im` runs for an outbound-only app; None: webhooks only, the
    # platform is not served by that process.
    outbound: Callable[[IMApp, asyncio.Event], Coroutine[Any, Any, None]] | None = None
    # Test connection's extra step for an outbound-only app: what it reports, or a PlatformError.
    outbound_check: Callable[[IMApp], Awaitable[str]] | None = None


PLATFORMS: dict[str, PlatformPackage] = {
    Platform.SLACK: PlatformPackage(
        client=SlackClient,
        thread=slack_thread.SlackThread,
        channel_thread=slack_thread.channel_thread,
        urls=slack_views.urlpatterns,
        setup=slack_setup.guide,
        credentials=("bot_token", "signing_secret", "app_token"),
        outbound=socket_mode.serve_app,
        outbound_check=socket_mode.check,
    ),
    Platform.TELEGRAM: PlatformPackage(
        client=TelegramClient,
        thread=telegram_thread.TelegramThread,
        channel_thread=telegram_thread.channel_thread,
        urls=telegram_views.urlpatterns,
        setup=telegram_setup.guide,
        credentials=("bot_token", "webhook_secret"),
        outbound=polling.poll_app,
    ),
    Platform.FEISHU: PlatformPackage(
        client=FeishuClient,
        thread=feishu_thread.FeishuThread,
        channel_thread=feishu_thread.channel_thread,
        urls=feishu_views.urlpatterns,
        setup=feishu_setup.guide,
        credentials=("app_id", "app_secret", "verification_token", "encrypt_key"),
    ),
}
