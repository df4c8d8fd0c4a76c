"""One-click changes: a person sends one exact write through the review gate without a model
choosing it (a report's proposed next action, an incident's Acknowledge / Resolve).

`request_call` opens a chat for the person whose next turn runs the call as the worker persona
that owns the tool, so the call meets the same gate as an agent's (persona lock, reviewer, dual
sign-off in that chat) and leaves the same audit rows; the chat page shows the review and the
outcome live (docs/review-gate.md, "One-click changes").
"""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.utils.translation import gettext as _

from agents_app.models import RequestedCall
from agents_app.personas.catalog import NOT_DISPATCHABLE
from agents_app.personas.registry import get_registry
from agents_app.runtime import turns
from agents_app.tools.binding import organization_tools
from agents_app.tools.toolbag import build_toolbag
from chat_app import services
from chat_app.models import ChatSession, SessionKind
from ops_app.tenancy.scoping import organization_of

CHANGING_CLASSES = ("write", "destructive")


class CallRefused(Exception):
    """The call cannot be sent: unknown tool, not a change, or no persona may run it."""


def persona_for(organization_id: int, tool_name: str) -> str:
    """The dispatchable, non-read-only persona whose toolbag holds `tool_name` (first by name), or
    CallRefused: the gate would refuse any other caller anyway."""
    available = async_to_sync(organization_tools)(organization_id)
    tool = available.get(tool_name)
    if tool is None:
        raise CallRefused(_("There is no tool named %(tool)s.") % {"tool": tool_name})
    if tool.tool_class not in CHANGING_CLASSES:
        raise CallRefused(_("%(tool)s changes nothing; ask for it in a chat instead.") % {"tool": tool_name})
    registry = get_registry(organization_id)
    for persona in sorted(registry.all(), key=lambda p: p.name):
        if persona.name in NOT_DISPATCHABLE or persona.permission_mode == "read-only":
            continue
        if tool_name in {t.name for t in build_toolbag(persona, available, coordinator=False)}:
            return persona.name
    raise CallRefused(_("No agent of your organization may run %(tool)s.") % {"tool": tool_name})


def request_call(
    user, tool_name: str, arguments: dict, description: str, title: str, *, hidden: bool = False
) -> ChatSession:
    """Open a chat for `user` whose turn runs `tool_name(arguments)` through the review gate.

    `hidden`: the session is of kind `action`, kept for the gate and the audit but not listed among
    the person's chats, because the page that pressed the button shows the progress itself."""
    if not isinstance(arguments, dict):
        raise CallRefused(_("The proposed arguments are not an object."))
    organization = organization_of(user)
    if organization is None:
        raise CallRefused(_("You belong to no organization."))
    persona = persona_for(organization.pk, tool_name)  # before the chat, so a refusal leaves none
    chat = services.start_chat(user, title=title[:200])
    if hidden:
        chat.kind = SessionKind.ACTION
        chat.save(update_fields=["kind"])
    RequestedCall.objects.create(
        organization_id=chat.organization_id,
        session=chat,
        requested_by=user,
        persona=persona,
        tool=tool_name,
        arguments=arguments,
        description=description[:500],
    )
    turns.start_turn(chat, description)
    return chat
