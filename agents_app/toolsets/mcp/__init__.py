"""The tools of an organization's MCP servers, discovered at run time (docs/integrations.md)."""
