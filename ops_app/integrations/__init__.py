"""An organization's integrations: telemetry data sources, its own LLM endpoints and MCP tool
servers (docs/integrations.md). Their settings are rows of `ops_app.models.integrations`."""
