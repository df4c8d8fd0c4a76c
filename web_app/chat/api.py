"""Chat API: a user's own coordinator sessions, their messages, their worker tree, and Stop.

A busy server answers 503 with `Retry-After` and a JSON `detail`, never 500: when this process
already carries its cap of waiting turns (`?wait=1`, docs/runtime.md "Executors"), and when the
database connection pool has no connection free in time.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from django.utils.translation import gettext
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from agents_app.api import TurnsBusy, get_runtime, last_answer, start_turn, wait_for_turn, waiting_slot
from chat_app import services
from chat_app.models import MAX_MESSAGE_CHARS, ChatMessage, ChatSession, SessionKind
from ops_app.core.async_db import pool_exhausted
from web_app.tree import build_tree

log = logging.getLogger(__name__)
DATABASE_RETRY_AFTER = 2  # seconds: a saturated pool frees connections within milliseconds


def busy(detail: str, retry_after: int) -> Response:
    """503 with the seconds to wait before trying again, for clients and load balancers alike."""
    return Response(
        {"detail": detail},
        status=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={"Retry-After": str(retry_after)},
    )


class MessageSerializer(serializers.ModelSerializer):
    class Meta:
        model = ChatMessage
        fields = ["id", "seq", "role", "kind", "content", "tool_calls", "tool_call_id", "created_at"]


class SessionSerializer(serializers.ModelSerializer):
    class Meta:
        model = ChatSession
        fields = ["id", "title", "status", "agent_id", "channel", "created_at", "started_at", "error"]
        read_only_fields = ["status", "agent_id", "created_at", "started_at", "error"]


class SessionDetailSerializer(SessionSerializer):
    messages = MessageSerializer(many=True, read_only=True)

    class Meta(SessionSerializer.Meta):
        fields = [*SessionSerializer.Meta.fields, "usage", "messages"]


class PostMessageSerializer(serializers.Serializer):
    content = serializers.CharField(max_length=MAX_MESSAGE_CHARS, trim_whitespace=True)


class ChatSessionViewSet(
    mixins.ListModelMixin, mixins.CreateModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Only the caller's own coordinator sessions exist here; anything else is a 404."""

    serializer_class = SessionSerializer

    def get_queryset(self):
        mine = ChatSession.objects.filter(user=self.request.user, parent_session__isnull=True)
        if self.action == "list":  # a one-click change's session is no chat of theirs, yet still theirs
            mine = mine.exclude(kind=SessionKind.ACTION)
        return mine.order_by("-created_at")

    def get_serializer_class(self):
        return SessionDetailSerializer if self.action == "retrieve" else SessionSerializer

    def perform_create(self, serializer):
        serializer.instance = services.start_chat(
            self.request.user, channel="api", title=serializer.validated_data.get("title", "")
        )

    @extend_schema(
        request=PostMessageSerializer,
        parameters=[
            OpenApiParameter("wait", bool, description="Block until the turn ends and return the answer.")
        ],
    )
    @action(detail=True, methods=["post"])
    def messages(self, request, pk=None):
        session = self.get_object()
        body = PostMessageSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        content = body.validated_data["content"]
        if request.query_params.get("wait") not in ("1", "true", "yes"):
            return self._accepted(session, content)
        try:
            with waiting_slot():  # before anything is stored: a refused message leaves no trace
                return self._answered(session, content)
        except TurnsBusy as exc:
            log.warning("refused a waiting turn of session %s: %s", session.pk, exc)
            return busy(
                gettext("The server is busy with other turns. Try again in %(seconds)s seconds.")
                % {"seconds": exc.retry_after},
                exc.retry_after,
            )

    def _accepted(self, session: ChatSession, content: str) -> Response:
        try:
            message, _ = start_turn(session, content)
        except services.TurnInProgress as exc:
            return self._conflict(session, exc)
        return Response({"session": session.pk, "turn_id": message.pk}, status=status.HTTP_202_ACCEPTED)

    def _answered(self, session: ChatSession, content: str) -> Response:
        """Run the turn and wait for it; the wait holds no database connection (agents_app.api)."""
        try:
            message, waitable = start_turn(session, content)
        except services.TurnInProgress as exc:
            return self._conflict(session, exc)
        try:
            finished = wait_for_turn(session.pk, waitable)
        except TimeoutError:  # the turn goes on; its answer will be in GET /api/sessions/{id}/
            return Response(
                {"session": session.pk, "turn_id": message.pk, "status": "running"},
                status=status.HTTP_202_ACCEPTED,
            )
        answer = last_answer(session.pk)
        return Response(
            {
                "session": session.pk,
                "turn_id": message.pk,
                "status": "failed" if finished.error else "completed",
                "error": finished.error,
                "answer": answer.content if answer and answer.pk > message.pk else "",
            }
        )

    @staticmethod
    def _conflict(session: ChatSession, exc: services.TurnInProgress) -> Response:
        return Response(
            {"detail": str(exc), "session": session.pk, "running_turn_id": exc.turn_id},
            status=status.HTTP_409_CONFLICT,
        )

    def handle_exception(self, exc):
        if pool_exhausted(exc):
            log.warning("answered 503: no database connection free in time (%s)", exc)
            return busy(gettext("The database is busy. Try again in a few seconds."), DATABASE_RETRY_AFTER)
        return super().handle_exception(exc)

    @action(detail=True, methods=["get"])
    def tree(self, request, pk=None):
        """The same tree the audit pages show, minus the workers' raw transcripts."""
        session = self.get_object()
        return Response(build_tree(session, messages="root"))

    @action(detail=True, methods=["post"])
    def stop(self, request, pk=None):
        session = self.get_object()
        stopped = async_to_sync(get_runtime().stop_session)(session.pk, by=request.user.get_username())
        return Response({"session": session.pk, "stop_requested": stopped}, status=status.HTTP_202_ACCEPTED)
