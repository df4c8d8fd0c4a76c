"""Incidents API: the organization's incidents with their latest report, their investigations,
and a person's "Investigate" (docs/investigations.md, "API")."""

from __future__ import annotations

import json

from django.db.models import Q
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from incidents_app import investigations, runner
from incidents_app.access import may_act, visible_incidents
from incidents_app.models import Investigation, current_report, newest_first
from ops_app.models import Incident


class InvestigationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Investigation
        fields = [
            "id", "incident", "status", "trigger", "session", "report", "partial_findings", "confidence",
            "error", "tokens", "created_at", "started_at", "finished_at",
        ]  # fmt: skip


class IncidentSerializer(serializers.ModelSerializer):
    device = serializers.SlugRelatedField(slug_field="name", read_only=True)
    alert_source = serializers.SlugRelatedField(
        slug_field="name", read_only=True, help_text="The alert source's name (PagerDuty, Opsgenie… sources)."
    )

    class Meta:
        model = Incident
        fields = [
            "id", "title", "severity", "status", "source", "started_at", "acknowledged_at", "resolved_at",
            "affected_services", "device", "alert_source", "external_id", "external_url",
        ]  # fmt: skip


class IncidentDetailSerializer(IncidentSerializer):
    latest_investigation = serializers.SerializerMethodField()
    current_investigation = serializers.SerializerMethodField(
        help_text="The investigation whose report the page shows: the newest with a valid report."
    )

    class Meta(IncidentSerializer.Meta):
        fields = [*IncidentSerializer.Meta.fields, "summary", "latest_investigation", "current_investigation"]

    @extend_schema(responses=InvestigationSerializer(allow_null=True))
    def get_latest_investigation(self, incident: Incident) -> dict | None:
        latest = newest_first(incident).first()
        return InvestigationSerializer(latest).data if latest else None

    @extend_schema(responses=InvestigationSerializer(allow_null=True))
    def get_current_investigation(self, incident: Incident) -> dict | None:
        current = current_report(incident)
        return InvestigationSerializer(current).data if current else None


def filter_incidents(queryset, params):
    """The filters the list page and the API share: status, severity, affected service, free-text
    search."""
    if params.get("service"):
        # JSON text match: works on SQLite too, where JSON containment does not.
        queryset = queryset.filter(affected_services__icontains=json.dumps(params["service"][:200]))
    if params.get("status"):
        queryset = queryset.filter(status=params["status"])
    if params.get("severity"):
        queryset = queryset.filter(severity=params["severity"])
    if params.get("q"):
        q = params["q"][:200]
        queryset = queryset.filter(
            Q(title__icontains=q) | Q(summary__icontains=q) | Q(device__name__icontains=q)
        )
    return queryset


@extend_schema(
    parameters=[
        OpenApiParameter("status", str, description="firing, acknowledged or resolved"),
        OpenApiParameter("severity", str, description="critical, high, warning or info"),
        OpenApiParameter("service", str, description="An affected service"),
        OpenApiParameter("q", str, description="Text in the title, summary or device name"),
    ]
)
class IncidentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Incidents of the caller's organization; another organization's are a 404."""

    def get_queryset(self):
        return (
            filter_incidents(visible_incidents(self.request.user), self.request.query_params)
            .select_related("device", "alert_source")
            .order_by("-started_at", "-pk")
        )

    def get_serializer_class(self):
        if self.action == "investigations":
            return InvestigationSerializer
        return IncidentDetailSerializer if self.action == "retrieve" else IncidentSerializer

    @extend_schema(request=None, responses={202: InvestigationSerializer, 409: None})
    @action(detail=True, methods=["post"])
    def investigate(self, request, pk=None):
        incident = self.get_object()
        if not may_act(request.user):
            raise PermissionDenied(_("Auditors cannot start investigations."))
        try:
            investigation = investigations.request(incident, request.user)
        except investigations.AlreadyInvestigating as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        runner.start_queued(incident.organization_id)
        investigation.refresh_from_db()
        return Response(InvestigationSerializer(investigation).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses=InvestigationSerializer(many=True))
    @action(detail=True, methods=["get"])
    def investigations(self, request, pk=None):
        incident = self.get_object()
        rows = newest_first(incident)
        page = self.paginate_queryset(rows)
        if page is not None:
            return self.get_paginated_response(InvestigationSerializer(page, many=True).data)
        return Response(InvestigationSerializer(rows, many=True).data)
