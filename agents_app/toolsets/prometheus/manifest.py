from agents_app.toolsets.backends import DATASOURCE, TIME_HELP
from agents_app.toolsets.manifest import Toolset, ToolSpec

DEFAULT_POINTS = 120
MAX_POINTS = 1000

QUERY_PROMQL = ToolSpec(
    "query_promql",
    "Run a PromQL query against Prometheus. Without start: an instant query (at `time`, default "
    "now). With start: a range query from start to end (default now); the step is widened when "
    "needed so a series never has more than max_points points. Each series comes back as labels, "
    "last, min, max and points [[unix_seconds, value], ...].",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "The PromQL expression."},
            "time": {"type": "string", "description": f"Instant query evaluation time. {TIME_HELP}."},
            "start": {
                "type": "string",
                "description": f"Range start; makes this a range query. {TIME_HELP}.",
            },
            "end": {"type": "string", "description": f"Range end (default now). {TIME_HELP}."},
            "step": {"type": "string", "description": "Resolution such as 15s, 1m, 5m (may be widened)."},
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
