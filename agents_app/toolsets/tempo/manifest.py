from agents_app.toolsets.backends import DATASOURCE
from agents_app.toolsets.manifest import TIME_HELP, Toolset, ToolSpec

MAX_TRACES = 50

QUERY_TRACEQL = ToolSpec(
    "query_traceql",
    "Search traces in Tempo with TraceQL (/api/search), or fetch one trace by id (its spans with "
    "service, name, duration and error flag). Give either query or trace_id.",
    {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": 'TraceQL, e.g. {resource.service.name="checkout" && status=error}.',
            },
            "trace_id": {"type": "string", "description": "A trace id (hex) to fetch instead of searching."},
            "start": {"type": "string", "description": f"Search window start (default now-1h). {TIME_HELP}."},
            "end": {"type": "string", "description": f"Search window end (default now). {TIME_HELP}."},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_TRACES, "description": "Default 20."},
            "datasource": DATASOURCE,
        },
        "additionalProperties": False,
    },
    timeout=20,
    datasource="tempo",
    owner="incident-investigator",
    redirect_reason="trace searches belong to an investigation",
)

TOOLSET = Toolset("tempo", "TraceQL searches and traces by id", (QUERY_TRACEQL,))
