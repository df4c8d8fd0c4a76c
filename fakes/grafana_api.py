"""A fake Grafana HTTP API for the write-back tests: `POST /api/annotations` (an annotation on a
dashboard panel with dashboardUID and panelId, or an organization annotation without them; time
in epoch milliseconds, tags, text → 200 {"message": "Annotation added", "id"}) and Grafana
Alerting's Alertmanager-compatible silences `POST /api/alertmanager/grafana/api/v2/silences`
(matchers, startsAt, endsAt, createdBy, comment → 202 {"silenceID"}). Both take a service account
token as `Authorization: Bearer <token>`; a wrong one is 401 {"message": "invalid API key"}."""

from __future__ import annotations

import itertools
import uuid

from fakes.vendor_rest import VendorFake, header

SILENCES = "/api/alertmanager/grafana/api/v2/silences"


class FakeGrafana(VendorFake):
    name = "fake-grafana"

    def __init__(self, token: str = "glsa_test_token_0123456789") -> None:
        super().__init__()
        self.token = token
        self.annotations: list[dict] = []
        self.silences: list[dict] = []
        self._ids = itertools.count(1)

    @property
    def api_base(self) -> str:
        return self.base_url

    def authorized(self, headers: dict) -> bool:
        return header(headers, "Authorization") == f"Bearer {self.token}"

    def unauthorized(self) -> dict:
        return {"message": "invalid API key", "traceID": ""}

    def route(self, method: str, path: str, query: dict, body: dict, headers: dict) -> tuple[int, dict]:
        if method == "POST" and path == "/api/annotations":
            return self._annotate(body)
        if method == "POST" and path == SILENCES:
            return self._silence(body)
        return 404, {"message": "Not found"}

    def _annotate(self, body: dict) -> tuple[int, dict]:
        if not body.get("text"):
            return 400, {"message": "Failed to save annotation: text is required"}
        if "panelId" in body and not body.get("dashboardUID"):
            return 400, {"message": "panelId needs a dashboardUID"}
        with self.lock:
            annotation = {"id": next(self._ids), **body}
            self.annotations.append(annotation)
        return 200, {"message": "Annotation added", "id": annotation["id"]}

    def _silence(self, body: dict) -> tuple[int, dict]:
        matchers = body.get("matchers") or []
        required = ("startsAt", "endsAt", "createdBy", "comment")
        if not matchers or any(not body.get(key) for key in required):
            return 400, {"message": "invalid silence: matchers, startsAt, endsAt, createdBy, comment"}
        if any(not {"name", "value", "isRegex"} <= set(m) for m in matchers):
            return 400, {"message": "invalid matcher"}
        with self.lock:
            silence = {"id": str(uuid.uuid4()), **body}
            self.silences.append(silence)
        return 202, {"silenceID": silence["id"]}
