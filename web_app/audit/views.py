"""Audit pages. Thin: check the role, look rows up in the auditor's querysets, render.

Members get 403 (their own sessions are in the chat UI); another tenant's object is simply not in
the queryset, so its URL answers 404 like a missing one.
"""

from __future__ import annotations

from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _

from audit_app import queries
from chat_app.channels import channel_choices
from chat_app.models import SessionKind, SessionStatus
from web_app.tree import build_tree, call_detail, history_summaries, tree_totals


def auditor_required(view):
    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not queries.can_audit(request.user):
            raise PermissionDenied(_("The audit pages are for auditors and organization admins."))
        return view(request, *args, **kwargs)

    return wrapper


def with_labels(row: dict) -> dict:
    """A session row with its kind, status and channel in the reader's words, for the page; the
    API's JSON and the filters' values keep the stored codes."""
    labels = {
        "kind": dict(SessionKind.choices),
        "status": dict(SessionStatus.choices),
        "channel": dict(channel_choices()),
    }
    return {
        **row,
        **{f"{key}_label": str(names.get(row.get(key), row.get(key))) for key, names in labels.items()},
    }


@auditor_required
def session_list(request: HttpRequest) -> HttpResponse:
    form = queries.SessionFilterForm(request.GET or None)
    sessions = queries.audit_sessions(request.user)
    page = queries.Page([], None)
    if form.is_bound and not form.is_valid():
        return render(request, "audit/sessions.html", {"form": form, "page": page}, status=400)
    data = form.cleaned_data if form.is_bound else {}
    try:
        size = queries.page_size(request.GET.get("limit"))
        rows = queries.filter_sessions(sessions, data, queries.audit_calls(request.user))
        page = queries.session_page(rows, request.GET.get("cursor"), size)
        page.rows = [with_labels(row) for row in page.rows]
    except queries.BadCursor as error:
        return HttpResponseBadRequest(str(error))
    following = None
    if page.next_cursor:
        params = request.GET.copy()
        params["cursor"] = page.next_cursor
        following = params.urlencode()
    return render(request, "audit/sessions.html", {"form": form, "page": page, "following": following})


@auditor_required
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    return render(request, "audit/session.html", _tree_context(request, session_id))


@auditor_required
def session_print(request: HttpRequest, session_id: int) -> HttpResponse:
    return render(request, "audit/print.html", _tree_context(request, session_id))


def _tree_context(request: HttpRequest, session_id: int) -> dict:
    session = get_object_or_404(queries.audit_sessions(request.user), pk=session_id)
    tree = build_tree(session)
    root = session if session.pk == tree["id"] else session.root_session
    # The chat behind the tree, for the one person who may open it: its owner.
    chat_url = (
        reverse("chat-page", args=[root.pk]) if root is not None and root.user_id == request.user.pk else ""
    )
    return {
        "tree": tree,
        "totals": tree_totals(tree),
        "focus": session.pk,
        "chat_url": chat_url,
        # What the model was told instead of the chat's earlier turns (docs/chat.md "Long chats").
        "summaries": history_summaries(tree["id"]),
    }


@auditor_required
def call_page(request: HttpRequest, call_id: int) -> HttpResponse:
    call = get_object_or_404(queries.audit_calls(request.user).select_related("session", "user"), pk=call_id)
    return render(request, "audit/call.html", {"call": call_detail(call), "row": call})


@auditor_required
def call_lookup(request: HttpRequest, session_id: int, call_id: str) -> HttpResponse:
    """The live chat knows a call by (session, model call id) before it knows the audit row; this
    lands on the newest row of that id in that session (ids may repeat, the newest is the one
    that just ended)."""
    rows = queries.audit_calls(request.user).filter(session_id=session_id, tool_call_id=call_id)
    row = rows.order_by("-started_at", "-pk").first()
    if row is None:
        raise Http404(_("No audit record for this call yet."))
    return redirect("audit-call", row.pk)
