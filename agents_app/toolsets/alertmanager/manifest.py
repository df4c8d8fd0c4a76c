from agents_app.toolsets.manifest import REASON, Toolset, ToolSpec

SILENCE_MAX_MINUTES = 7 * 24 * 60
MATCHER = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "value": {"type": "string"},
        "isRegex": {"type": "boolean", "default": False},
        "isEqual": {"type": "boolean", "default": True},
    },
    "required": ["name", "value"],
    "additionalProperties": False,
}

CREATE_SILENCE = ToolSpec(
    "create_silence",
    "Silence matching alerts in Alertmanager for a while (API v2). Matchers select alerts by label; "
    "prefer exact matchers on instance or alertname. Reviewed before it runs; returns the silence id.",
    {
        "type": "object",
        "properties": {
            "matchers": {"type": "array", "items": MATCHER, "minItems": 1},
            "duration_minutes": {"type": "integer", "minimum": 1, "maximum": SILENCE_MAX_MINUTES},
            "reason": REASON,
            "datasource": {
                "type": "string",
                "description": "The Alertmanager data source, by name (default: the default one).",
            },
        },
        "required": ["matchers", "duration_minutes", "reason"],
        "additionalProperties": False,
    },
    tool_class="write",
    datasource="alertmanager",
)

TOOLSET = Toolset("alertmanager", "Alertmanager silences", (CREATE_SILENCE,))
