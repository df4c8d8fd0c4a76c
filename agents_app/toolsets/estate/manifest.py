from agents_app.toolsets.manifest import ROLE_DEVICE_LIST, TIME_HELP, OfflineHints, Toolset, ToolSpec
from agents_app.toolsets.records import LIMIT_PARAM
from ops_app.estate.topology import DIRECTIONS, MAX_DEPTH
from ops_app.models import Device, TopologyNode

# The nouns (en, es, fr) of a question that looks devices up.
DEVICE_WORDS = frozenset({"device", "host", "server", "role", "address", "ip", "label", "owner", "own",
                          "dispositivo", "servidor", "rol", "dirección", "appareil", "serveur", "rôle",
                          "adresse"})  # fmt: skip

QUERY_DEVICES = ToolSpec(
    "query_devices",
    "Devices (hosts): address, kind, labels, transport, online.",
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Part of the name or address."},
            "kind": {"type": "string", "enum": [k.value for k in Device.Kind]},
            "label": {"type": "string", "description": "key=value, or a key."},
            "online": {"type": "boolean"},
            "limit": LIMIT_PARAM,
        },
        "additionalProperties": False,
    },
    offline=OfflineHints(
        lookup_words=DEVICE_WORDS, lookup_rank=2, device_argument="name", role=ROLE_DEVICE_LIST
    ),
    core=True,
)

QUERY_CHANGE_EVENTS = ToolSpec(
    "query_change_events",
    "Recorded changes (who created, changed or deleted a device, rule, topology node/edge, agent or "
    "receiver, and what changed), newest first. Default window: the last 24 hours.",
    {
        "type": "object",
        "properties": {
            "since": {"type": "string", "description": f"Default now-24h. {TIME_HELP}."},
            "until": {"type": "string", "description": f"Default now. {TIME_HELP}."},
            "resource_type": {
                "type": "string",
                "enum": [
                    "device",
                    "alert_rule",
                    "topology_node",
                    "topology_edge",
                    "user_agent",
                    "alertmanager_receiver",
                ],
            },
            "resource": {"type": "string", "description": "Part of the resource's name, or its id."},
            "actor": {"type": "string", "description": "User name of whoever made the change."},
            "limit": LIMIT_PARAM,
        },
        "additionalProperties": False,
    },
    offline=OfflineHints(
        lookup_words=frozenset({"change", "changed", "cambio", "changement"}), lookup_rank=3
    ),
)

FIND_TOPOLOGY_NODE = ToolSpec(
    "find_topology_node",
    "Find service-graph nodes (services, hosts, databases, queues...) by approximate name or label "
    "value, best match first, with a score between 0 and 1.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "A name, part of it, or a label value."},
            "kind": {"type": "string", "enum": [k.value for k in TopologyNode.Kind]},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)

EXPAND_TOPOLOGY = ToolSpec(
    "expand_topology",
    "The neighbourhood of a service-graph node. An edge A → B means A calls / depends on B: "
    "'downstream' follows dependencies, 'upstream' finds callers, 'both' does both. Depth 1 to 3.",
    {
        "type": "object",
        "properties": {
            "node": {"type": "string", "description": "Node name (exact, case-insensitive) or id."},
            "direction": {"type": "string", "enum": list(DIRECTIONS), "description": "Default both."},
            "depth": {"type": "integer", "minimum": 1, "maximum": MAX_DEPTH, "description": "Default 1."},
        },
        "required": ["node"],
        "additionalProperties": False,
    },
)

TOOLSET = Toolset(
    "estate",
    "Devices, recorded changes and the service graph of the organization",
    (QUERY_DEVICES, QUERY_CHANGE_EVENTS, FIND_TOPOLOGY_NODE, EXPAND_TOPOLOGY),
    backend="ongrid",
)
