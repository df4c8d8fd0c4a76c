"""A "Test" button on a change form, beside "History": it POSTs to `<id>/test/`, which runs the
admin's check on that one row (the same check as the list's bulk action) and comes back to the
form with the verdict as a message. What the check shows obeys docs/security.md ("What Test
shows"): a status and a short reason, never the remote server's words."""

from __future__ import annotations

from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.urls import path, reverse
from django.utils.translation import gettext_lazy as _


class TestOnFormMixin:
    """Put before the ModelAdmin base; define `test_one(request, obj)`."""

    change_form_template = "admin/ongrid/change_form_with_test.html"
    test_label = _("Test")
    test_permission = "view"  # "view": a read-only check; "change": the check writes to the row

    def test_one(self, request: HttpRequest, obj) -> None:  # pragma: no cover - each admin's own
        raise NotImplementedError

    def _test_url_name(self) -> str:
        return f"{self.opts.app_label}_{self.opts.model_name}_test"

    def get_urls(self):
        own = [
            path(
                "<path:object_id>/test/",
                self.admin_site.admin_view(self.test_view),
                name=self._test_url_name(),
            )
        ]
        return own + super().get_urls()

    def _may_test(self, request: HttpRequest, obj) -> bool:
        if self.test_permission == "change":
            return self.has_change_permission(request, obj)
        return self.has_view_or_change_permission(request, obj)

    def test_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST only: a GET (a prefetch, a crawler) never calls a remote system."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        obj = self.get_object(request, unquote(object_id))  # scoped to the admin's organization
        if obj is None:
            raise Http404
        if not self._may_test(request, obj):
            raise PermissionDenied
        self.test_one(request, obj)
        return redirect(reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_change", args=[obj.pk]))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if obj is not None and self._may_test(request, obj):
            extra["test_url"] = reverse(f"admin:{self._test_url_name()}", args=[obj.pk])
            extra["test_label"] = self.test_label
        return super().change_view(request, object_id, form_url, extra_context=extra)
