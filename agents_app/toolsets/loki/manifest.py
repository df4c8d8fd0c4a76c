from agents_app.toolsets.backends import DATASOURCE
from agents_app.toolsets.manifest import TIME_HELP, Toolset, ToolSpec

MAX_LOG_LINES = 500
MAX_LINE_CHARS = 500

QUERY_LOGQL = ToolSpec(
    "query_logql",
    "Search logs: a LogQL query against Loki (/loki/api/v1/query_range). Log queries return streams (labels "
    "and [time, line] entries, lines cut at 500 characters); metric queries return series like "
    "query_promql. Default window: the last hour.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": 'LogQL, e.g. {service="checkout"} |= "error".'},
            "start": {"type": "string", "description": f"Default now-1h. {TIME_HELP}."},
            "end": {"type": "string", "description": f"Default now. {TIME_HELP}."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_LOG_LINES,
                "description": "Default 100.",
            },
            "direction": {
                "type": "string",
                "enum": ["backward", "forward"],
                "description": "Default backward.",
            },
            "datasource": DATASOURCE,
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    timeout=20,
    datasource="loki",
    owner="incident-investigator",
    redirect_reason="log searches belong to an investigation",
)

TOOLSET = Toolset("loki", "LogQL log and metric queries", (QUERY_LOGQL,))
