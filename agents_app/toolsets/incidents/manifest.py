from agents_app.toolsets.manifest import (
    REASON,
    ROLE_INCIDENT_DETAIL,
    TIME_HELP,
    OfflineHints,
    Toolset,
    ToolSpec,
)
from agents_app.toolsets.records import LIMIT_PARAM
from ops_app.models import Incident, Severity

SEVERITIES = [s.value for s in Severity]
INCIDENT_SCHEMA = {
    "type": "object",
    "properties": {
        "incident_id": {"type": "integer", "minimum": 1, "description": "From query_incidents."},
        "reason": REASON,
    },
    "required": ["incident_id", "reason"],
    "additionalProperties": False,
}
INCIDENT_STATUSES = [s.value for s in Incident.Status]

QUERY_INCIDENTS = ToolSpec(
    "query_incidents",
    "Search incidents (optional filters, ANDed), newest first: id, title, severity, status, times, "
    "services, device.",
    {
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": INCIDENT_STATUSES},
            "severity": {"type": "string", "enum": SEVERITIES},
            "service": {"type": "string", "description": "An affected service (exact)."},
            "device": {"type": "string", "description": "A device name (exact)."},
            "since": {"type": "string", "description": f"Started at or after: {TIME_HELP}."},
            "until": {"type": "string", "description": "Started at or before, in the forms of since."},
            "text": {"type": "string", "description": "Words in the title or summary."},
            "limit": LIMIT_PARAM,
        },
        "additionalProperties": False,
    },
    offline=OfflineHints(lookup_words=frozenset({"incident", "incidente", "incidencia"})),
    core=True,
)

GET_ACTIVE_INCIDENTS = ToolSpec(
    "get_active_incidents",
    "The open (firing or acknowledged) incidents, worst first.",
    {"type": "object", "properties": {"limit": LIMIT_PARAM}, "additionalProperties": False},
    offline=OfflineHints(open_variant_of="query_incidents"),
    core=True,
)

GET_INCIDENT_DETAIL = ToolSpec(
    "get_incident_detail",
    "One incident in full: alerts, timeline, devices, topology nodes and the changes around it.",
    {
        "type": "object",
        "properties": {"incident_id": {"type": "integer", "description": "The incident's id."}},
        "required": ["incident_id"],
        "additionalProperties": False,
    },
    offline=OfflineHints(role=ROLE_INCIDENT_DETAIL),
    core=True,
)

CORRELATE_INCIDENT = ToolSpec(
    "correlate_incident",
    "For one incident: its alerts, alerts on neighbouring services and the change events within "
    "±30 minutes of its start, as one timeline ordered by time (earliest deviation first), plus the "
    "changes on its topology neighbourhood just before it started (likely causes, closest first).",
    {
        "type": "object",
        "properties": {"incident_id": {"type": "integer", "description": "The incident's id."}},
        "required": ["incident_id"],
        "additionalProperties": False,
    },
    owner="incident-investigator",
    redirect_reason="correlation is a root-cause investigation",
)

FIND_SIMILAR_INCIDENTS_MAX = 10
FIND_SIMILAR_INCIDENTS = ToolSpec(
    "find_similar_incidents",
    "Past incidents like this one, from their investigations' reports: give an incident_id (its "
    "title, alerts and summary make the question; the incident itself is left out) or a query, or "
    "both. Returns the best first with title, link, incident id, score from 0 to 1, root cause, "
    "what fixed it and when it was resolved. Use it early: a cause seen before is often back.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Symptoms, services or alert names, in any language."},
            "incident_id": {"type": "integer", "minimum": 1, "description": "From query_incidents."},
            "top_k": {"type": "integer", "minimum": 1, "maximum": FIND_SIMILAR_INCIDENTS_MAX, "default": 5},
        },
        "additionalProperties": False,
    },
    # Its words are in every incident brief: chosen by wording, it would crowd out the evidence.
    offline=OfflineHints(auto_pick=False),
)

QUERY_ALERT_RULES = ToolSpec(
    "query_alert_rules",
    "Alerting rules: those stored in Ongrid and, when Prometheus is configured, the live rules "
    "Prometheus evaluates (with their state: inactive, pending or firing).",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Part of the rule name (case-insensitive)."},
            "severity": {"type": "string", "enum": SEVERITIES},
            "include_live": {
                "type": "boolean",
                "description": "Also read Prometheus /api/v1/rules (default true).",
            },
            "datasource": {
                "type": "string",
                "description": "The Prometheus data source for live rules (default: the default one).",
            },
        },
        "additionalProperties": False,
    },
    datasource="prometheus",
    offline=OfflineHints(lookup_words=frozenset({"rule", "regla", "règle"}), lookup_rank=1),
)

ACKNOWLEDGE_INCIDENT = ToolSpec(
    "acknowledge_incident",
    "Acknowledge a firing incident: someone is on it. Recorded in the change history with the agent "
    "as actor. Reviewed before it runs.",
    INCIDENT_SCHEMA,
    tool_class="write",
)

RESOLVE_INCIDENT = ToolSpec(
    "resolve_incident",
    "Mark an incident resolved once its cause is fixed and its alerts are quiet. Recorded in the "
    "change history with the agent as actor. Reviewed before it runs.",
    INCIDENT_SCHEMA,
    tool_class="write",
)

SILENCE_INCIDENT_MAX_MINUTES = 24 * 60
SILENCE_INCIDENT = ToolSpec(
    "silence_incident",
    "Quiet an incident's paging for a while where it came from: snooze it in PagerDuty or Opsgenie, "
    "or silence its alerts' common labels in Grafana Alerting or Alertmanager. Says so when the "
    "incident's source cannot be silenced. Reviewed before it runs.",
    {
        "type": "object",
        "properties": {
            "incident_id": {"type": "integer", "minimum": 1, "description": "From query_incidents."},
            "minutes": {
                "type": "integer",
                "minimum": 1,
                "maximum": SILENCE_INCIDENT_MAX_MINUTES,
                "default": 60,
                "description": "How long (default 60).",
            },
            "reason": REASON,
        },
        "required": ["incident_id", "reason"],
        "additionalProperties": False,
    },
    tool_class="write",
    backend="external",  # it reaches the paging tool or Alertmanager, not only Ongrid's records
)

TOOLSET = Toolset(
    "incidents",
    "Incidents, their alerts and alerting rules: search, detail, correlation, similar past incidents, "
    "acknowledge, resolve, silence",
    (
        QUERY_INCIDENTS,
        GET_ACTIVE_INCIDENTS,
        GET_INCIDENT_DETAIL,
        CORRELATE_INCIDENT,
        FIND_SIMILAR_INCIDENTS,
        QUERY_ALERT_RULES,
        ACKNOWLEDGE_INCIDENT,
        RESOLVE_INCIDENT,
        SILENCE_INCIDENT,
    ),
    backend="ongrid",
    handlers=("queries", "changes"),
)
