"""Everything the offline model knows about particular tools, in one table.

Elsewhere the offline model reads tools only through their schemas (names, descriptions,
parameters); these are the few it knows by name. Each entry is shaped like what a tool's entry in
its toolset's manifest could carry, so the table can later be read from the manifests instead:
the rest of the package only asks the functions below.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class OfflineHints:
    """What the offline model knows about one tool."""

    # The nouns (English, Spanish, French) that name the records this tool lists: a plain look-up
    # question naming them ("which incidents…?") is answered by calling it directly.
    lookup_words: frozenset[str] = frozenset()
    # The look-up tool this one narrows to the open (active, firing) records.
    open_variant_of: str | None = None
    # The argument a look-up fills with the device the question names.
    device_argument: str | None = None
    # A runtime tool (dispatch, messages, stops), never picked as a read.
    control: bool = False
    # The offline reviewer approves a held call of it (it changes only Ongrid's own records).
    approved_offline: bool = False
    # The part it plays in the offline model's own runs (see the ROLE_* names below).
    role: str | None = None


ROLE_DISPATCH = "dispatch"  # among a persona's tools: that persona is the coordinator
ROLE_DEVICE_LIST = "device list"  # lists the devices, to read loosely written names
ROLE_INCIDENT_DETAIL = "incident detail"  # the investigator's one read
ROLE_REPORT = "report"  # among a persona's tools: this is the investigator's run

_DEVICE_WORDS = frozenset({"device", "host", "server", "role", "address", "ip", "label", "owner", "own",
                           "dispositivo", "servidor", "rol", "dirección", "appareil", "serveur", "rôle",
                           "adresse"})  # fmt: skip
# The look-ups' order is their precedence: a question naming two kinds of record asks for the first.
TOOLS: dict[str, OfflineHints] = {
    "query_incidents": OfflineHints(lookup_words=frozenset({"incident", "incidente", "incidencia"})),
    "get_active_incidents": OfflineHints(open_variant_of="query_incidents"),
    "query_alert_rules": OfflineHints(lookup_words=frozenset({"rule", "regla", "règle"})),
    "query_devices": OfflineHints(lookup_words=_DEVICE_WORDS, device_argument="name", role=ROLE_DEVICE_LIST),
    "query_change_events": OfflineHints(
        lookup_words=frozenset({"change", "changed", "cambio", "changement"})
    ),
    "get_incident_detail": OfflineHints(role=ROLE_INCIDENT_DETAIL),
    "submit_report": OfflineHints(role=ROLE_REPORT),
    "acknowledge_incident": OfflineHints(approved_offline=True),
    "resolve_incident": OfflineHints(approved_offline=True),
    "AgentTool": OfflineHints(control=True, role=ROLE_DISPATCH),
    "SendMessage": OfflineHints(control=True),
    "TaskStop": OfflineHints(control=True),
}


def hints(name: str) -> OfflineHints:
    return TOOLS.get(name, OfflineHints())


def lookup_tools() -> list[tuple[str, frozenset[str]]]:
    """(tool, the nouns that name its records) of every look-up tool, in precedence order."""
    return [(name, entry.lookup_words) for name, entry in TOOLS.items() if entry.lookup_words]


def open_variant(name: str) -> str | None:
    """The tool that lists only the open records of what look-up tool `name` lists, if any."""
    return next((other for other, entry in TOOLS.items() if entry.open_variant_of == name), None)


def is_control_tool(name: str) -> bool:
    return hints(name).control


def is_approved_offline(name: str) -> bool:
    return hints(name).approved_offline


def tool_for(role: str) -> str:
    """The tool that plays `role` (one of the ROLE_* names)."""
    return next(name for name, entry in TOOLS.items() if entry.role == role)
