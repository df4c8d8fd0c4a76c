"""A fake Opsgenie Alert API v2 (https://docs.opsgenie.com/docs/alert-api) for the write-back
tests: `POST /v2/alerts/{identifier}/notes | acknowledge | close | snooze` with
`Authorization: GenieKey <key>` and `?identifierType=id|alias|tiny` (id when absent). Opsgenie
processes these asynchronously: it answers 202 {"result": "Request will be processed", "took",
"requestId"} and the outcome is fetched later; a wrong key is 401 {"message": "Could not
authenticate", ...}. Alerts are known by id (and alias)."""

from __future__ import annotations

import uuid

from fakes.vendor_rest import VendorFake, header

ACTIONS = ("notes", "acknowledge", "close", "snooze")


class FakeOpsgenie(VendorFake):
    name = "fake-opsgenie"

    def __init__(self, api_key: str = "og-integration-key-0123", alerts: dict[str, str] | None = None):
        super().__init__()
        self.api_key = api_key
        # alert id -> {"alias", "status", "notes", "snoozed_until"}
        self.alerts: dict[str, dict] = {
            pk: {"alias": alias, "status": "open", "acknowledged": False, "notes": [], "snoozed_until": None}
            for pk, alias in (alerts or {"8418d193-2dab-4490-b331-8c02cdd196b7": "checkout-5xx"}).items()
        }

    @property
    def api_base(self) -> str:
        return self.base_url

    def notes(self, alert_id: str) -> list[str]:
        with self.lock:
            return list(self.alerts[alert_id]["notes"])

    def authorized(self, headers: dict) -> bool:
        return header(headers, "Authorization") == f"GenieKey {self.api_key}"

    def unauthorized(self) -> dict:
        return {"message": "Could not authenticate", "took": 0.0, "requestId": str(uuid.uuid4())}

    def route(self, method: str, path: str, query: dict, body: dict, headers: dict) -> tuple[int, dict]:
        parts = path.strip("/").split("/")
        if method != "POST" or len(parts) != 4 or parts[:2] != ["v2", "alerts"] or parts[3] not in ACTIONS:
            return 404, self._answer("Not Found")
        alert = self._find(parts[2], query.get("identifierType", "id"))
        if alert is None:
            return 404, self._answer("Alert does not exist")
        problem = self._apply(parts[3], alert, body)
        if problem:
            return 422, self._answer(problem)
        return 202, self._answer("Request will be processed")

    def _find(self, identifier: str, kind: str) -> dict | None:
        with self.lock:
            if kind == "id":
                return self.alerts.get(identifier)
            if kind == "alias":
                return next((a for a in self.alerts.values() if a["alias"] == identifier), None)
        return None

    def _apply(self, action: str, alert: dict, body: dict) -> str:
        with self.lock:
            if action == "notes":
                if not body.get("note"):
                    return "Note should be provided"
                alert["notes"].append(body["note"])
            elif action == "acknowledge":
                alert["acknowledged"] = True
            elif action == "close":
                alert["status"] = "closed"
            elif action == "snooze":
                if not body.get("endTime"):
                    return "endTime should be provided"
                alert["snoozed_until"] = body["endTime"]
        return ""

    def _answer(self, result: str) -> dict:
        return {"result": result, "took": 0.01, "requestId": str(uuid.uuid4())}
