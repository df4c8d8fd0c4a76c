"""REST API for agents.

`GET /api/agents/` — the catalog the caller's coordinator sees (any member of an organization).
`/api/agents/custom/` — the organization's user agents; org admins only. Rows of other
organizations do not exist for the caller (404), and every write runs the admin's validation.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.utils import extend_schema
from rest_framework import permissions, serializers, viewsets
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from agents_app.api import (
    PERSONA_FIELDS,
    Persona,
    PersonaError,
    ProposalClosed,
    agent_catalog,
    describe_proposal,
    field_errors,
    first_line,
    get_registry,
    is_org_admin,
    may_sign,
    sign,
    specialists,
    to_markdown,
)
from agents_app.models import MutatingProposal, UserAgent
from ops_app.tenancy.scoping import organization_of, sees_all_tenants
from web_app.chat import fragments


class IsOrgAdmin(permissions.BasePermission):
    message = "Only organization admins manage custom agents."

    def has_permission(self, request, view) -> bool:
        return is_org_admin(request.user)


def _persona_summary(persona: Persona) -> dict:
    return {
        "name": persona.name,
        "description": persona.description,
        "when_to_use": first_line(persona.when_to_use),
        "source": persona.source,
        "permission_mode": persona.permission_mode,
        "tools": list(persona.tools) if persona.tools is not None else None,
    }


class AgentSummarySerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    when_to_use = serializers.CharField(help_text="The first line, as in the catalog.")
    source = serializers.ChoiceField(choices=["builtin", "mounted", "user"])
    permission_mode = serializers.CharField()
    tools = serializers.ListField(child=serializers.CharField(), allow_null=True)


class CatalogSerializer(serializers.Serializer):
    catalog = serializers.CharField(help_text="The Markdown catalog the coordinator's prompt carries.")
    agents = AgentSummarySerializer(many=True)


class AgentCatalogView(APIView):
    """The specialists the caller's coordinator may dispatch to, and the catalog text it reads."""

    @extend_schema(responses=CatalogSerializer)
    def get(self, request: Request) -> Response:
        organization = organization_of(request.user)
        if organization is None and not sees_all_tenants(request.user):
            raise PermissionDenied(_("You belong to no organization."))
        current = get_registry(organization.pk if organization else None)
        personas = current.all()
        return Response(
            {
                "catalog": agent_catalog(personas),
                "agents": [_persona_summary(p) for p in specialists(personas)],
            }
        )


class NameList(serializers.ListField):
    """A list of names; a comma-separated string is accepted too, like in persona files."""

    child = serializers.CharField(max_length=100)

    def to_internal_value(self, data):
        if isinstance(data, str):
            data = [item.strip() for item in data.split(",") if item.strip()]
        return list(dict.fromkeys(super().to_internal_value(data)))


class UserAgentSerializer(serializers.ModelSerializer):
    tools = NameList(required=False, allow_null=True, default=None)
    disallowed_tools = NameList(required=False, default=list)
    skills = NameList(required=False, default=list)
    extra = serializers.DictField(required=False, default=dict)
    markdown = serializers.SerializerMethodField()

    class Meta:
        model = UserAgent
        fields = ("id", *PERSONA_FIELDS, "enabled", "created_at", "updated_at", "markdown")
        read_only_fields = ("id", "created_at", "updated_at", "markdown")
        # Uniqueness per organization is checked in validate(): the organization is not a field.
        validators: list = []

    def get_markdown(self, agent: UserAgent) -> str | None:
        try:
            return to_markdown(agent)
        except PersonaError:  # an invalid legacy row still lists; it just has no file form
            return None

    def validate(self, attrs: dict) -> dict:
        request = self.context["request"]
        candidate = UserAgent(pk=self.instance.pk if self.instance else None)
        if self.instance is not None:
            for field in PERSONA_FIELDS + ("enabled", "organization_id"):
                setattr(candidate, field, getattr(self.instance, field))
        else:
            organization = organization_of(request.user)
            if organization is None:
                raise serializers.ValidationError(_("You belong to no organization."))
            candidate.organization = organization
        for field, value in attrs.items():
            setattr(candidate, field, value)
        errors = field_errors(candidate, request.user)
        if errors:
            if "__all__" in errors:
                errors["non_field_errors"] = errors.pop("__all__")
            raise serializers.ValidationError(errors)
        return attrs


class UserAgentViewSet(viewsets.ModelViewSet):
    serializer_class = UserAgentSerializer
    permission_classes = (permissions.IsAuthenticated, IsOrgAdmin)
    http_method_names = ["get", "post", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return UserAgent.objects.for_user(self.request.user).order_by("name")

    def perform_create(self, serializer) -> None:
        serializer.save(organization=organization_of(self.request.user), created_by=self.request.user)


class SignSerializer(serializers.Serializer):
    reason = serializers.CharField(required=False, allow_blank=True, max_length=1000)


class ProposalSignView(APIView):
    """`POST /api/proposals/{id}/approve|reject/`: the human half of dual sign (docs/review-gate.md).

    Only the chat's owner or an org admin of the proposal's organization may sign; another
    tenant's proposal does not exist for the caller (404). A proposal that is not waiting for a
    human (decided, timed out, still with the reviewer) answers 409 and changes nothing. An htmx
    request (the chat page's card buttons) gets the redrawn card instead of JSON.
    """

    approve = True

    @extend_schema(request=SignSerializer, responses={200: None, 403: None, 404: None, 409: None})
    def post(self, request: Request, pk: int) -> Response:
        rows = MutatingProposal.objects.for_user(request.user).select_related("root_session")
        proposal = get_object_or_404(rows, pk=pk)
        if not may_sign(request.user, proposal):
            raise PermissionDenied(_("Only the chat's owner or an org admin may sign this change."))
        form = SignSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        closed = None
        try:
            proposal = sign(
                proposal, request.user, self.approve, form.validated_data.get("reason", "")
            )
        except ProposalClosed as error:
            closed = str(error)
        if request.headers.get("HX-Request"):
            # Even a late click redraws the card: the page then shows who decided first.
            return HttpResponse(fragments.proposal_card(describe_proposal(proposal)))
        if closed:
            return Response({"detail": closed, "proposal": describe_proposal(proposal)}, status=409)
        return Response(describe_proposal(proposal))
