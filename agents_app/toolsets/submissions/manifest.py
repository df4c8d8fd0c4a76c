from agents_app.toolsets.manifest import ROLE_REPORT, OfflineHints, Toolset, ToolSpec

SUBMIT_REPORT = ToolSpec(
    "submit_report",
    "Submit your root-cause report for this incident. Call it exactly once, at the end. "
    "Every evidence item names the id of one of YOUR earlier tool calls that produced it.",
    scope="run",
    offline=OfflineHints(role=ROLE_REPORT),
)
SUBMIT_FINDING = ToolSpec(
    "submit_finding",
    "Record the inspection's result: its status, a summary and the findings with evidence.",
    scope="run",
)

TOOLSET = Toolset(
    "submissions",
    "The result of a run a surface opened: a report, a finding",
    (SUBMIT_REPORT, SUBMIT_FINDING),
    backend="ongrid",
    handlers=(),
)
