"""The audit data by API: read-only, for auditors, with the same filters as the pages."""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit_app import queries
from web_app.tree import build_tree, call_detail, call_entry, tree_document


class IsAuditor(BasePermission):
    message = _("The audit API is for auditors and organization admins.")

    def has_permission(self, request, view) -> bool:
        return queries.can_audit(request.user)


class AuditView(APIView):
    permission_classes = [IsAuthenticated, IsAuditor]

    def filters(self, request: Request, form_class) -> dict:
        form = form_class(request.query_params)
        if not form.is_valid():
            raise ValidationError(form.errors.get_json_data())
        return form.cleaned_data

    def page(self, request: Request, fetch) -> queries.Page:
        try:
            return fetch(
                request.query_params.get("cursor"), queries.page_size(request.query_params.get("limit"))
            )
        except queries.BadCursor as error:
            raise ValidationError({"cursor": [str(error)]}) from None

    def paged(self, request: Request, page: queries.Page, results: list) -> Response:
        following = None
        if page.next_cursor:
            params = request.query_params.copy()
            params["cursor"] = page.next_cursor
            following = request.build_absolute_uri(f"{request.path}?{params.urlencode()}")
        return Response({"next": following, "results": results})


class SessionListView(AuditView):
    """GET /api/audit/sessions/: filters q, user, persona, kind, status, channel, tool, rejected,
    since, until, top; newest first; `cursor` pages (follow `next`), `limit` up to 200."""

    def get(self, request: Request) -> Response:
        data = self.filters(request, queries.SessionFilterForm)
        user = request.user
        sessions = queries.filter_sessions(queries.audit_sessions(user), data, queries.audit_calls(user))
        page = self.page(request, lambda cursor, size: queries.session_page(sessions, cursor, size))
        return self.paged(request, page, page.rows)


class SessionTreeView(AuditView):
    """GET /api/audit/sessions/{id}/tree/: the whole tree the session belongs to."""

    def get(self, request: Request, session_id: int) -> Response:
        session = get_object_or_404(queries.audit_sessions(request.user), pk=session_id)
        return Response(tree_document(build_tree(session)))


class SessionExportView(AuditView):
    """GET /api/audit/sessions/{id}/export/: the tree as a JSON file to keep."""

    def get(self, request: Request, session_id: int) -> Response:
        session = get_object_or_404(queries.audit_sessions(request.user), pk=session_id)
        tree = build_tree(session)
        body = {"format": "ongrid-audit-tree/1", **tree_document(tree)}
        filename = f"ongrid-session-{tree['id']}.json"
        return Response(body, headers={"Content-Disposition": f'attachment; filename="{filename}"'})


class ToolCallListView(AuditView):
    """GET /api/audit/tool-calls/: filters session, tool, tool_class, status, persona, since, until."""

    def get(self, request: Request) -> Response:
        data = self.filters(request, queries.CallFilterForm)
        calls = queries.filter_calls(queries.audit_calls(request.user), data)
        page = self.page(request, lambda cursor, size: queries.keyset_page(calls, "started_at", cursor, size))
        return self.paged(request, page, [call_entry(call) for call in page.rows])


class ToolCallDetailView(AuditView):
    """GET /api/audit/tool-calls/{id}/: one call with its proposal and reviewer sessions."""

    def get(self, request: Request, call_id: int) -> Response:
        calls = queries.audit_calls(request.user).select_related("session")
        call = calls.filter(pk=call_id).first()
        if call is None:
            raise Http404
        return Response(call_detail(call))
