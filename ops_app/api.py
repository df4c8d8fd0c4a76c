"""REST endpoints of ops_app. Views stay thin: parsing and storage live in ops_app.knowledge.vault."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Count
from django.utils.translation import gettext
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from ops_app.core.jsonbody import LimitedJSONParser
from ops_app.knowledge import vault
from ops_app.models import KnowledgeDocument
from ops_app.tasks import index_knowledge_document
from ops_app.tenancy.scoping import organization_of


class KnowledgeDocumentSerializer(serializers.ModelSerializer):
    passages = serializers.SerializerMethodField()
    indexed = serializers.BooleanField(source="is_indexed", read_only=True)

    def get_passages(self, document: KnowledgeDocument) -> int:
        count = getattr(document, "passage_count", None)  # annotated on lists (no N+1)
        return document.passages.count() if count is None else count

    class Meta:
        model = KnowledgeDocument
        fields = ["id", "title", "source_kind", "source", "passages", "indexed", "created_at", "updated_at"]


class KnowledgeUploadSerializer(serializers.Serializer):
    """Either a file (Markdown, text, PDF) or inline `content` with a `filename`."""

    file = serializers.FileField(required=False)
    title = serializers.CharField(required=False, max_length=300, allow_blank=True)
    content = serializers.CharField(required=False, allow_blank=False, trim_whitespace=False)
    filename = serializers.CharField(required=False, max_length=200)

    def validate(self, attrs: dict) -> dict:
        upload = attrs.get("file")
        if upload is None and not attrs.get("content"):
            raise serializers.ValidationError(gettext("send a `file`, or `content` with a `filename`"))
        if upload is not None:
            if upload.size > vault.MAX_UPLOAD_BYTES:
                raise serializers.ValidationError(
                    {
                        "file": gettext("the file is %(size)s bytes; the limit is %(limit)s")
                        % {"size": upload.size, "limit": vault.MAX_UPLOAD_BYTES}
                    }
                )
            name, data = upload.name, upload.read()
        else:
            name, data = attrs.get("filename") or "note.md", attrs["content"].encode()
        name = vault.safe_filename(name)
        try:
            text = vault.extract_text(name, data)
        except vault.KnowledgeInputError as exc:
            raise serializers.ValidationError({"file": str(exc)}) from None
        fallback = name.rsplit(".", 1)[0].replace("-", " ").replace("_", " ")
        title, body = (
            vault.title_of(text, fallback) if name.endswith((".md", ".markdown")) else (fallback, text)
        )
        return {"source": name, "title": (attrs.get("title") or "").strip() or title, "content": body}


class KnowledgeJSONParser(LimitedJSONParser):
    """JSON uploads may be as large as docs/knowledge.md says, not Django's 2.5 MB default."""

    max_bytes = vault.MAX_JSON_UPLOAD_BODY


class KnowledgeView(APIView):
    """GET: the organization's documents. POST: upload a document (org admins).

    The text is extracted from the upload here, so a bad file is a 400 right away; chunking and
    indexing run as a Celery task (inline without Redis). Uploading the same file name again
    replaces the document; the same content again changes nothing.
    """

    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser, FormParser, KnowledgeJSONParser]

    @extend_schema(responses=KnowledgeDocumentSerializer(many=True))
    def get(self, request: Request) -> Response:
        organization = organization_of(request.user)
        documents = (
            KnowledgeDocument.objects.for_organization(organization)
            .annotate(passage_count=Count("passages"))
            .order_by("-updated_at")[:200]
        )
        return Response({"results": KnowledgeDocumentSerializer(documents, many=True).data})

    @extend_schema(
        request={
            "multipart/form-data": KnowledgeUploadSerializer,
            "application/json": KnowledgeUploadSerializer,
        },
        responses={200: dict, 202: dict},
    )
    def post(self, request: Request) -> Response:
        organization = organization_of(request.user)
        if organization is None:
            return Response(
                {"detail": gettext("you belong to no organization")}, status=status.HTTP_403_FORBIDDEN
            )
        if not request.user.has_perm("ops_app.add_knowledgedocument"):
            return Response(
                {"detail": gettext("only organization admins can add knowledge documents")},
                status=status.HTTP_403_FORBIDDEN,
            )
        upload = KnowledgeUploadSerializer(data=request.data)
        upload.is_valid(raise_exception=True)
        with transaction.atomic():
            document, changed = vault.save_document(
                organization, kind=KnowledgeDocument.Source.UPLOAD, **upload.validated_data
            )
            if changed or not document.is_indexed:
                transaction.on_commit(lambda: index_knowledge_document.delay(document.pk))
        document.refresh_from_db()
        if document.is_indexed:
            state = "indexed" if changed else "unchanged"
        else:
            state = "queued"  # a Celery worker will index it
        body = {"status": state, "document": KnowledgeDocumentSerializer(document).data}
        return Response(body, status=status.HTTP_200_OK if state == "unchanged" else status.HTTP_202_ACCEPTED)
