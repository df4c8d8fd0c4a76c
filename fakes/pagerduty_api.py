"""A fake PagerDuty REST API v2 (https://developer.pagerduty.com/api-reference/) for the write-back
tests: `POST /incidents/{id}/notes` ({"note": {"content"}} → 201 {"note"}), `PUT /incidents/{id}`
({"incident": {"type": "incident_reference", "status": "acknowledged" | "resolved"}} → 200) and
`POST /incidents/{id}/snooze` ({"duration": seconds} → 201). Every call needs
`Authorization: Token token=<key>`, the v2 `Accept` header and, for writes, a `From` e-mail;
PagerDuty answers 401 to a wrong key and 400 to a missing From. Incidents are known by id."""

from __future__ import annotations

import itertools
import re

from fakes.vendor_rest import VendorFake, header

ACCEPT = "application/vnd.pagerduty+json;version=2"


class FakePagerDuty(VendorFake):
    name = "fake-pagerduty"

    def __init__(self, api_key: str = "pd-rest-key-0123456789", incidents: tuple[str, ...] = ("Q1ABC2DEF",)):
        super().__init__()
        self.api_key = api_key
        self.incidents: dict[str, dict] = {pk: {"status": "triggered", "notes": []} for pk in incidents}
        self._ids = itertools.count(1)

    @property
    def api_base(self) -> str:
        return self.base_url

    def notes(self, incident_id: str) -> list[str]:
        with self.lock:
            return [note["content"] for note in self.incidents[incident_id]["notes"]]

    def authorized(self, headers: dict) -> bool:
        return header(headers, "Authorization") == f"Token token={self.api_key}"

    def unauthorized(self) -> dict:
        return {"error": {"message": "Unauthorized", "code": 2006}}

    def route(self, method: str, path: str, query: dict, body: dict, headers: dict) -> tuple[int, dict]:
        if header(headers, "Accept") != ACCEPT:
            return 406, {"error": {"message": "Accept header must be " + ACCEPT}}
        if "@" not in header(headers, "From"):
            return 400, {"error": {"message": "Invalid Input Provided", "errors": ["From header"]}}
        match = re.fullmatch(r"/incidents/([A-Za-z0-9]+)(/notes|/snooze)?", path)
        if match is None:
            return 404, {"error": {"message": "Not Found", "code": 2100}}
        incident_id, action = match.groups()
        with self.lock:
            incident = self.incidents.get(incident_id)
        if incident is None:
            return 404, {"error": {"message": "Incident Not Found", "code": 2100}}
        return self._write(method, action or "", incident_id, incident, body)

    def _write(self, method: str, action: str, incident_id: str, incident: dict, body: dict):
        if action == "/notes" and method == "POST":
            content = (body.get("note") or {}).get("content")
            if not content:
                return 400, {"error": {"message": "Invalid Input Provided", "errors": ["Content required"]}}
            note = {"id": f"PN{next(self._ids)}", "content": content}
            with self.lock:
                incident["notes"].append(note)
            return 201, {"note": note}
        if action == "/snooze" and method == "POST":
            if incident["status"] != "acknowledged":
                return 400, {"error": {"message": "Incident is not acknowledged", "code": 2001}}
            duration = body.get("duration")
            if not isinstance(duration, int) or duration < 1:
                return 400, {"error": {"message": "Invalid Input Provided", "errors": ["duration"]}}
            with self.lock:
                incident["snoozed_for"] = duration
            return 201, {"incident": {"id": incident_id, "status": incident["status"]}}
        if not action and method == "PUT":
            change = body.get("incident") or {}
            if change.get("type") != "incident_reference" or change.get("status") not in (
                "acknowledged",
                "resolved",
            ):
                return 400, {"error": {"message": "Invalid Input Provided", "errors": ["status"]}}
            with self.lock:
                incident["status"] = change["status"]
            return 200, {"incident": {"id": incident_id, "status": change["status"]}}
        return 405, {"error": {"message": "Method Not Allowed"}}
