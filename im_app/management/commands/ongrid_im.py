"""`manage.py ongrid_im`: the outbound-only IM connections (Telegram long polling, Slack Socket
Mode) of every organization, in one process. Run it as a service next to daphne (docs/im.md)."""

from __future__ import annotations

import asyncio
import signal

from django.utils.translation import gettext_lazy as _

from agents_app.api import watch_agent_files
from im_app.outbound import run_all
from ops_app.core.commands import LocalizedCommand


class Command(LocalizedCommand):
    help = _(
        "Run the outbound-only IM connections (Telegram long polling, Slack Socket Mode) of all enabled apps."
    )

    def handle(self, *args, **options) -> None:
        watch_agent_files()  # the turns this process runs see mounted persona edits (docs/personas.md)
        asyncio.run(self._main())

    async def _main(self) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await run_all(stop)
