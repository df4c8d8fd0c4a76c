from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from chat_app.models import ChatSession
from fakes.openai_server import call, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)


def test_one_turn_from_the_terminal_prints_tiles_and_the_answer(member, agents_llm, capsys):
    agents_llm.add(
        "default",
        tool_calls(
            call(
                "AgentTool",
                {
                    "description": "Disk on web-01",
                    "subagent_type": "specialist-disk",
                    "prompt": "On web-01 what fills /var?",
                },
            )
        ),
        text("/var/log holds 38G."),
    )
    agents_llm.add("specialist-disk", text("38G of logs"))
    out = StringIO()
    call_command("ongrid_chat", "what fills /var on web-01?", user="alice", stdout=out)
    printed = out.getvalue() + capsys.readouterr().out
    assert "[specialist-disk #" in printed and "Disk on web-01" in printed
    assert "completed" in printed
    assert printed.rstrip().endswith("/var/log holds 38G.")
    chat = ChatSession.objects.get(user=member, parent_session=None)
    assert chat.channel == "cli" and chat.title == "what fills /var on web-01?"

    agents_llm.add("default", text("Still 38G."))
    again = StringIO()
    call_command("ongrid_chat", "and now?", session=chat.pk, user="alice", stdout=again)
    assert again.getvalue().rstrip().endswith("Still 38G.")
    assert ChatSession.objects.filter(user=member, parent_session=None).count() == 1


def test_unknown_user_or_foreign_session_is_a_clear_error(member, outsider):
    with pytest.raises(CommandError, match="No user named 'ghost'"):
        call_command("ongrid_chat", "hi", user="ghost")
    from chat_app.services import start_chat

    theirs = start_chat(outsider)
    with pytest.raises(CommandError, match=f"No chat session {theirs.pk} of alice"):
        call_command("ongrid_chat", "hi", session=theirs.pk, user="alice")
