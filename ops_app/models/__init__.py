"""Every model of ops_app, by concern: `tenancy` (organizations, memberships, API tokens and the
`TenantModel` base), `estate` (devices, incidents, alerts, rules, change events, topology),
`knowledge` (the vault's documents and passages), `integrations` (data sources, LLM endpoints,
MCP servers and tools) and `alerting` (the paging tools alerts come from). Django loads an app's
models from `ops_app.models`, so each is imported here, and `from ops_app.models import Device`
stays the way to name one."""

# Django registers the models in import order (content types, permissions, dumpdata): kept in the
# order they were defined in before the split.
# isort: off
from ops_app.models.tenancy import (
    ApiToken,
    Membership,
    Organization,
    TenantManager,
    TenantModel,
    TenantQuerySet,
)
from ops_app.models.estate import (
    SEVERITY_RANK,
    Alert,
    AlertmanagerReceiver,
    AlertRule,
    ChangeEvent,
    Device,
    Incident,
    Severity,
    TopologyEdge,
    TopologyNode,
)
from ops_app.models.knowledge import KnowledgeDocument, KnowledgePassage, VaultRepository
from ops_app.models.integrations import (
    MCP_NAME,
    ClusterObjectState,
    DataSource,
    LLMEndpoint,
    McpServer,
    McpTool,
)
from ops_app.models.alerting import AlertDelivery, AlertSource
# isort: on

__all__ = [
    "MCP_NAME",
    "SEVERITY_RANK",
    "Alert",
    "AlertDelivery",
    "AlertRule",
    "AlertSource",
    "AlertmanagerReceiver",
    "ApiToken",
    "ChangeEvent",
    "ClusterObjectState",
    "DataSource",
    "Device",
    "Incident",
    "KnowledgeDocument",
    "KnowledgePassage",
    "LLMEndpoint",
    "McpServer",
    "McpTool",
    "Membership",
    "Organization",
    "Severity",
    "TenantManager",
    "TenantModel",
    "TenantQuerySet",
    "TopologyEdge",
    "TopologyNode",
    "VaultRepository",
]
