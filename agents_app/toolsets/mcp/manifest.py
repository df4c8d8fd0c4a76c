from agents_app.toolsets.manifest import Toolset

# `mcp__<server>__<tool>`: every MCP tool's name as the agents see it. Persona lists may name any
# such tool or pattern; the toolbag keeps the ones the organization's servers really have.
TOOL_PREFIX = "mcp__"

# No tool is declared here: each organization's enabled servers bring theirs (`tools.py`), with
# the schema the server gives and the class an admin gave it (write until marked read).
TOOLSET = Toolset("mcp", "Tools of the organization's MCP servers, discovered at run time", ())
