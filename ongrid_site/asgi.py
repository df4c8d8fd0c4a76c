"""ASGI entry point: HTTP through Django, websockets through Channels, one daphne process."""

import asyncio
import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ongrid_site.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from agents_app.api import reap_at_startup, remember_main_loop, run_in_background, watch_agent_files  # noqa: E402
from im_app import redelivery  # noqa: E402
from incidents_app import startup, writeback_outbox  # noqa: E402
from ongrid_site.origins import ExactOriginValidator  # noqa: E402
from ongrid_site.routing import websocket_urlpatterns  # noqa: E402
from ops_app import cluster_collector  # noqa: E402
from ops_app.knowledge import git_sync  # noqa: E402
from schedules_app import embedded as embedded_scheduler  # noqa: E402

router = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": ExactOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)


async def application(scope, receive, send):
    """The router, plus: sync views hand chat turns to this server's event loop (see executors),
    and the first request of a process closes session rows orphaned by a previous crash and, in
    the embedded shape, starts the schedule loop (docs/schedules.md) and the cluster change
    collector (docs/kubernetes.md) and the vault repositories' sync, delivers IM answers still
    in the outbox (docs/im.md) and starts watching the mounted persona files (docs/personas.md)."""
    if remember_main_loop(asyncio.get_running_loop()):
        run_in_background(reap_at_startup())
        run_in_background(startup.recover_investigations())
        run_in_background(redelivery.resume_if_pending())  # IM answers queued before a restart
        watch_agent_files()  # mounted persona and skill files go live when edited (docs/personas.md)
        if embedded_scheduler.should_run():
            run_in_background(embedded_scheduler.scheduler_loop())
        if cluster_collector.should_run_embedded():
            run_in_background(cluster_collector.collector_loop())
        if git_sync.should_run_embedded():
            run_in_background(git_sync.sync_loop())  # the vault's Git repositories (docs/knowledge.md)
        if writeback_outbox.embedded():
            run_in_background(writeback_outbox.writeback_loop())  # findings to the alert sources
    await router(scope, receive, send)
