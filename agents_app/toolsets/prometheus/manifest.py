from agents_app.toolsets.backends import DATASOURCE
from agents_app.toolsets.manifest import TIME_HELP, Toolset, ToolSpec

DEFAULT_POINTS = 120
MAX_POINTS = 1000

QUERY_PROMQL = ToolSpec(
    "query_promql",
    "Metrics (latency, error rates, saturation): PromQL against Prometheus, an instant query at "
    "`time` (default now), or with start a range query to end (default now), its step widened to "
    "keep max_points per series. Each series: labels, last, min, max, points [[unix_seconds, value], ...].",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The PromQL expression."},
            "time": {"type": "string", "description": f"{TIME_HELP}."},
            "start": {"type": "string", "description": "Range start, in the forms of time."},
            "end": {"type": "string", "description": "Range end, in the forms of time."},
            "step": {"type": "string", "description": "Such as 15s or 1m."},
            "max_points": {
                "type": "integer",
                "minimum": 10,
                "maximum": MAX_POINTS,
                "description": "Default 120.",
            },
            "datasource": DATASOURCE,
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    timeout=20,
    datasource="prometheus",
    core=True,
)

TOOLSET = Toolset("prometheus", "PromQL instant and range queries", (QUERY_PROMQL,))
