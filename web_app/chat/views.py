"""Chat pages. Thin: look the session up among the caller's own, render, or redirect."""

from __future__ import annotations

from asgiref.sync import async_to_sync
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from agents_app.api import get_runtime
from audit_app.queries import can_audit
from chat_app import services
from chat_app.models import ChatSession, SessionKind
from ops_app.tenancy.scoping import organization_of
from web_app.chat.examples import example_prompts
from web_app.chat.transcript import build_turns
from web_app.rendering import estate_links

SIDEBAR_SIZE = 50


def _own_chats(request: HttpRequest):
    return ChatSession.objects.filter(user=request.user, parent_session__isnull=True).exclude(
        kind=SessionKind.ACTION
    )


def _own_chat(request: HttpRequest, session_id: int) -> ChatSession:
    return get_object_or_404(_own_chats(request), pk=session_id)


def _sidebar(request: HttpRequest):
    # By last activity (a turn started or ended), newest first; dated in the sidebar.
    # Chats only: an investigation the person started lives on its incident's page, not here.
    chats = _own_chats(request).filter(kind=SessionKind.USER)
    sessions = chats.order_by("-updated_at", "-pk").only("pk", "title", "updated_at")
    return sessions[:SIDEBAR_SIZE]


@login_required
def chat_home(request: HttpRequest) -> HttpResponse:
    """The newest chat, or the empty new-chat page: looking is not chatting, so no row is made
    here (a session starts with its first message, on the new-chat page's socket)."""
    newest = _own_chats(request).order_by("-updated_at", "-pk").first()
    if newest is None:
        return redirect("chat-new")
    return redirect("chat-page", newest.pk)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def chat_new(request: HttpRequest) -> HttpResponse:
    """An empty chat page with no session behind it yet. POST (the old "+ New chat" form, kept
    for bookmarks and pages without JS) lands here too, still without creating anything."""
    if request.method == "POST":
        return redirect("chat-new")
    organization = organization_of(request.user)
    if organization is None:
        raise PermissionDenied(_("You belong to no organization, so you cannot start a chat."))
    context = {
        "chat": None,
        "sessions": _sidebar(request),
        "turns": [],
        "examples": example_prompts(organization.pk),
        "chat_session_id": None,
        "running": False,
    }
    return render(request, "chat/page.html", context)


@login_required
def chat_page(request: HttpRequest, session_id: int) -> HttpResponse:
    chat = _own_chat(request, session_id)
    turns = build_turns(
        chat,
        links=estate_links(chat.organization_id, request.user),
        audit=can_audit(request.user),
        viewer=request.user.get_username(),
    )
    context = {
        "chat": chat,
        "sessions": _sidebar(request),
        "turns": turns,
        "examples": [] if turns else example_prompts(chat.organization_id),
        "chat_session_id": chat.pk,
        "running": chat.status == "running",
    }
    return render(request, "chat/page.html", context)


@login_required
@require_POST
def chat_rename(request: HttpRequest, session_id: int) -> HttpResponse:
    chat = _own_chat(request, session_id)
    services.rename_chat(chat, request.POST.get("title", ""))
    # The breadcrumb (and, through chat.js, the tab's title) follow the new name at once.
    context = {"s": chat, "title": chat.title, "oob": True}
    return HttpResponse(
        render_to_string("chat/_sidebar_item.html", context, request)
        + render_to_string("chat/_crumb_title.html", context, request)
    )


@login_required
@require_POST
def chat_delete(request: HttpRequest, session_id: int) -> HttpResponse:
    chat = _own_chat(request, session_id)
    async_to_sync(get_runtime().stop_session)(chat.pk, by=request.user.get_username())
    services.delete_chat(chat)
    return redirect("chat-home")


@login_required
@require_POST
def chat_stop(request: HttpRequest, session_id: int) -> HttpResponse:
    chat = _own_chat(request, session_id)
    async_to_sync(get_runtime().stop_session)(chat.pk, by=request.user.get_username())
    return HttpResponse(status=204)


@login_required
@require_POST
def worker_stop(request: HttpRequest, session_id: int, worker_id: int) -> HttpResponse:
    chat = _own_chat(request, session_id)
    worker = get_object_or_404(ChatSession, pk=worker_id, root_session=chat)
    async_to_sync(get_runtime().stop_worker)(worker.pk, by=request.user.get_username())
    return HttpResponse(status=204)
