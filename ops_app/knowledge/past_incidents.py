"""Incidents seen before: every finished investigation's report kept as a `past-incident`
knowledge document, and the organization's past incidents most like a question or an incident.

One document per incident (source `incident/<id>`): the newest report replaces the older one,
and the resolution adds what fixed it. The document is ordinary knowledge, so `query_knowledge`
finds it too (kind `past-incident`); `similar` is the same search narrowed to past incidents and
folded to one result per incident, with the sections people look for (root cause, what fixed it).

What goes into the document is gathered by the incidents app (the report, the gate's executed
changes, who resolved it), which calls `record`; this module only writes and reads knowledge.
The sections' headings are fixed English words: `similar` reads them back.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from ops_app.knowledge import retrieval, vault
from ops_app.models import Incident, KnowledgeDocument

SUMMARY, ROOT_CAUSE, PATIENT_ZERO, AFFECTED, WHAT_FIXED_IT = (
    "Summary", "Root cause", "Patient zero", "Affected", "What fixed it",
)  # fmt: skip
MAX_SIMILAR = 10
# Several passages of one document may rank; asking for more keeps `top_k` incidents after folding.
PASSAGES_PER_INCIDENT = 4
_SECTION = re.compile(r"^## (.+?)\s*$", re.MULTILINE)


def source_of(incident_id: int) -> str:
    return f"incident/{incident_id}"


def title_of(incident: Incident) -> str:
    return f"{incident.title} ({incident.started_at:%Y-%m-%d})"


def markdown(incident: Incident, report: dict, fixed: list[str]) -> str:
    """The document: what a responder wants to read the next time it happens."""
    patient_zero = report.get("patient_zero") or {}
    sections = [
        (SUMMARY, report.get("summary", "")),
        (ROOT_CAUSE, report.get("root_cause", "")),
        (PATIENT_ZERO, " ".join(str(patient_zero.get(k, "")) for k in ("kind", "name")).strip()),
        (AFFECTED, _affected(incident)),
        (WHAT_FIXED_IT, "\n".join(f"- {line}" for line in fixed)),
    ]
    body = "\n\n".join(f"## {heading}\n\n{text.strip()}" for heading, text in sections if text.strip())
    return f"# {title_of(incident)}\n\n{body}\n"


def _affected(incident: Incident) -> str:
    lines = []
    if incident.affected_services:
        lines.append("Services: " + ", ".join(map(str, incident.affected_services)))
    if incident.device_id:
        lines.append(f"Device: {incident.device.name}")
    names = sorted({alert.name for alert in incident.alerts.all()[:50]})
    if names:
        lines.append("Alerts: " + ", ".join(names))
    lines.append(f"Severity: {incident.severity}")
    return "\n".join(f"- {line}" for line in lines)


def record(incident: Incident, report: dict, fixed: list[str], url: str) -> dict:
    """Write (or replace) the incident's past-incident document; a no-op when nothing changed.
    Local database work only: safe in a receiver's `on_commit`."""
    return vault.ingest(
        incident.organization_id,
        kind=KnowledgeDocument.Source.PAST_INCIDENT,
        source=source_of(incident.pk),
        title=title_of(incident),
        content=markdown(incident, report, fixed),
        url=url,
        incident_id=incident.pk,
    )


def query_for(incident: Incident) -> str:
    """The words an incident is known by: title, its alerts' names and label values, summary.
    Most telling first: the search keeps only the first words of a long question."""
    parts = [incident.title]
    values: list[str] = []
    for alert in incident.alerts.all()[:20]:
        values.append(alert.name)
        values += [str(v) for k, v in sorted((alert.labels or {}).items()) if k not in ("instance", "job")]
    parts += list(dict.fromkeys(values))
    parts += [str(service) for service in incident.affected_services or []]
    parts.append(incident.summary[:500])
    return " ".join(part for part in parts if part)


@dataclass(frozen=True)
class SimilarIncident:
    incident_id: int
    title: str
    url: str
    score: float
    why: str
    root_cause: str
    what_fixed_it: list[str]
    resolved_at: dt.datetime | None

    def as_dict(self) -> dict:
        return {
            "incident_id": self.incident_id,
            "title": self.title,
            "url": self.url,
            "score": self.score,
            "why": self.why,
            "root_cause": self.root_cause,
            "what_fixed_it": self.what_fixed_it,
            "resolved_at": self.resolved_at.isoformat() if self.resolved_at else None,
        }


@dataclass(frozen=True)
class Similar:
    """The past incidents found, best first, and how (`mode`, `note` as `retrieval.Retrieval`)."""

    incidents: list[SimilarIncident] = field(default_factory=list)
    mode: str = "full-text"
    note: str = ""


def similar(
    organization_id: int, query: str, top_k: int = 5, exclude_incident_id: int | None = None
) -> Similar:
    """The organization's past incidents most like `query`, one per incident, best first: one
    retrieval plus one query for the documents, however many are found."""
    top_k = max(1, min(int(top_k), MAX_SIMILAR))
    found = retrieval.search(
        organization_id, query, (top_k + 1) * PASSAGES_PER_INCIDENT, kinds=["past-incident"]
    )
    documents = {
        document.pk: document
        for document in KnowledgeDocument.objects.filter(
            organization_id=organization_id,
            pk__in={hit.document_id for hit in found.hits},
            source_kind=KnowledgeDocument.Source.PAST_INCIDENT,
            incident__isnull=False,
        )
        .exclude(incident_id=exclude_incident_id)
        .select_related("incident")
        .only("id", "title", "url", "content", "incident__id", "incident__resolved_at")
    }
    results: dict[int, SimilarIncident] = {}
    for hit in found.hits:  # best first: the first passage of a document is its best
        document = documents.get(hit.document_id)
        if document is None or document.incident_id in results:
            continue
        sections = sections_of(document.content)
        results[document.incident_id] = SimilarIncident(
            incident_id=document.incident_id,
            title=document.title,
            url=document.url,
            score=hit.score,
            why=hit.why,
            root_cause=sections.get(ROOT_CAUSE, ""),
            what_fixed_it=[
                line.removeprefix("- ") for line in sections.get(WHAT_FIXED_IT, "").splitlines() if line
            ],
            resolved_at=document.incident.resolved_at,
        )
    return Similar(list(results.values())[:top_k], found.mode, found.note)


def _items(text: str) -> list[str]:
    return [line.removeprefix("- ") for line in text.splitlines() if line.strip()]


def sections_of(content: str) -> dict[str, str]:
    """{heading: text} of a past-incident document's second-level sections."""
    parts = _SECTION.split(content)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
