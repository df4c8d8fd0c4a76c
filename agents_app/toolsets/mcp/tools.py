"""MCP tools as agent tools (docs/integrations.md): each discovered tool of an organization's
enabled MCP servers becomes `mcp__<server>__<tool>`, with the server's JSON schema as its
parameters (so the tool chain validates arguments against it) and the class an admin gave it
(write until marked read: writes go through the review gate like any other).

A call goes through the organization's reused session with that server; a server that is down
or breaks the session is a ToolError the model reads, never a crashed turn.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agents_app.toolsets.contract import Tool, ToolContext, ToolError
from agents_app.toolsets.mcp.manifest import TOOL_PREFIX
from ops_app.integrations import mcp_client
from ops_app.integrations.mcp_servers import aenabled_tools
from ops_app.models import McpTool

MAX_NAME = 64  # the function-name limit of OpenAI-compatible APIs
UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def agent_tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>`, with characters function names may not carry replaced by `_`."""
    return (TOOL_PREFIX + UNSAFE.sub("_", server) + "__" + UNSAFE.sub("_", tool))[:MAX_NAME]


def parameters_of(schema: dict) -> dict:
    """The server's input schema as a function-parameters object (an object, with properties)."""
    parameters = dict(schema or {})
    parameters["type"] = "object"
    parameters.setdefault("properties", {})
    return parameters


def render_result(result: Any) -> str | dict:
    """Text blocks joined; other blocks named by type; structured content when there is no text."""
    parts = []
    for block in result.content or []:
        text = getattr(block, "text", None)
        parts.append(text if text is not None else f"[{getattr(block, 'type', 'content')} block]")
    if not "".join(parts).strip() and getattr(result, "structured_content", None):
        return dict(result.structured_content)
    return "\n".join(parts)


def describe_call(tool_name: str, arguments: dict) -> dict:
    """An MCP write for the reviewer: Ongrid cannot know what it touches, so it is judged tenant-wide."""
    server, _, remote = tool_name.removeprefix(TOOL_PREFIX).partition("__")
    shown = json.dumps({k: v for k, v in arguments.items() if k != "reason"}, ensure_ascii=False, default=str)
    return {
        "action": f"MCP tool {remote or tool_name} on server {server}",
        "target": shown if len(shown) <= 300 else shown[:299] + "…",
        "blast_radius": "tenant_wide",
    }


def agent_tool(row: McpTool) -> Tool:
    spec = mcp_client.ServerSpec.of(row.server)
    remote_name = row.name
    name = agent_tool_name(spec.name, remote_name)

    async def handler(ctx: ToolContext, **arguments: Any) -> str | dict:
        if ctx.organization_id != spec.organization_id:  # built per organization; a second lock
            raise ToolError(f"{name} is not a tool of this organization")
        try:
            result = await mcp_client.call_tool(spec, remote_name, arguments)
        except mcp_client.McpUnavailable as error:
            raise ToolError(f"{error}. Carry on without this tool.") from None
        except mcp_client.McpCallError as error:
            raise ToolError(f"the MCP server {spec.name!r} refused the call: {error}") from None
        answer = render_result(result)
        if result.is_error:
            raise ToolError(f"{remote_name} on MCP server {spec.name!r} failed: {answer}")
        return answer

    description = f"[MCP server {spec.name}] {row.description or remote_name}".strip()
    return Tool(
        name=name,
        description=description[:1024],
        parameters=parameters_of(row.input_schema),
        handler=handler,
        tool_class="read" if row.tool_class == McpTool.ToolClass.READ else "write",
        timeout=spec.timeout + mcp_client.CONNECT_TIMEOUT,
        describe=lambda arguments: describe_call(name, arguments),
    )


async def organization_mcp_tools(organization_id: int) -> dict[str, Tool]:
    tools = {}
    for row in await aenabled_tools(organization_id):
        tool = agent_tool(row)
        tools.setdefault(tool.name, tool)
    return tools
