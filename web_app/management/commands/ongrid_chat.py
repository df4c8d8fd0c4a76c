"""Run one chat turn from the terminal: streamed text, worker tiles and the final answer.

The turn runs in this process (whatever the executor setting), so what it prints is live.
"""

from __future__ import annotations

import asyncio
import sys

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.utils.translation import gettext_lazy as _

from agents_app.api import events, get_runtime
from chat_app import services
from chat_app.models import ChatSession, SessionStatus
from ops_app.core.commands import LocalizedCommand


class Command(LocalizedCommand):
    help = _("Ask Ongrid's coordinator one question and print the turn as it happens.")

    def add_arguments(self, parser):
        parser.add_argument("question")
        parser.add_argument("--session", type=int, help=_("continue this chat session (yours)"))
        parser.add_argument("--user", default="admin", help=_("whose chat (default: admin)"))

    def handle(self, *args, question: str, session: int | None, user: str, **options):
        owner = get_user_model().objects.filter(username=user).first()
        if owner is None:
            raise CommandError(f"No user named {user!r}.")
        chat = self._session(owner, session)
        if chat.status == SessionStatus.RUNNING:
            raise CommandError(f"Session {chat.pk} is running a turn already.")
        services.begin_turn(chat.pk, question)
        self.stdout.write(f"session {chat.pk}")
        result = asyncio.run(get_runtime().run_turn(chat.pk, listeners=[self._print]))
        chat.refresh_from_db()
        if chat.error:
            raise CommandError(chat.error)
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS("answer:"))
        self.stdout.write(result.text if result else "")

    def _session(self, owner, session_id: int | None) -> ChatSession:
        if session_id is None:
            return services.start_chat(owner, channel="cli")
        chat = ChatSession.objects.filter(pk=session_id, user=owner, parent_session__isnull=True).first()
        if chat is None:
            raise CommandError(f"No chat session {session_id} of {owner.username}.")
        return chat

    async def _print(self, event: events.RuntimeEvent) -> None:
        match event:
            case events.TextDelta(worker=False):
                sys.stdout.write(event.text)
                sys.stdout.flush()
            case events.Note():
                self.stdout.write(f"\n» {event.text}")
            case events.WorkerStarted():
                self.stdout.write(f"\n[{event.persona} #{event.session}] {event.description} …")
            case events.WorkerEnded():
                self.stdout.write(f"[{event.session}] {event.status}")
            case events.ToolStarted(worker=False):
                self.stdout.write(f"\n· {event.tool}")
