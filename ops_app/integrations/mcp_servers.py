"""MCP servers' tool lists (docs/integrations.md): the one writer of `McpTool` rows. Discovery
adds new tools as writes (an admin marks a tool read), refreshes descriptions and schemas, keeps
the admin's class of known tools, and removes tools the server no longer offers."""

from __future__ import annotations

from dataclasses import dataclass

from asgiref.sync import async_to_sync
from django.db import transaction
from django.utils import timezone

from ops_app.integrations import mcp_client
from ops_app.models import McpServer, McpTool


@dataclass(frozen=True)
class Discovery:
    ok: bool
    added: list[str]
    removed: list[str]
    total: int
    error: str = ""


@transaction.atomic
def store_tools(server: McpServer, tools: list[mcp_client.RemoteTool]) -> Discovery:
    now = timezone.now()
    known = {row.name: row for row in McpTool.objects.filter(server=server)}
    added = []
    for tool in tools:
        row = known.pop(tool.name, None)
        if row is None:
            McpTool.objects.create(
                organization_id=server.organization_id,
                server=server,
                name=tool.name,
                description=tool.description,
                input_schema=tool.input_schema,
                discovered_at=now,
            )
            added.append(tool.name)
        elif (row.description, row.input_schema) != (tool.description, tool.input_schema):
            row.description, row.input_schema, row.discovered_at = tool.description, tool.input_schema, now
            row.save(update_fields=["description", "input_schema", "discovered_at"])
    removed = sorted(known)
    McpTool.objects.filter(server=server, name__in=removed).delete()
    # update(): bookkeeping, not an edit of the server (its session and change history stay).
    McpServer.objects.filter(pk=server.pk).update(discovered_at=now, discovery_error="")
    return Discovery(True, sorted(added), removed, len(tools))


def discover_tools(server: McpServer) -> Discovery:
    """Ask the server for its tools now and store them; a failure is stored and returned, not raised."""
    try:
        tools = async_to_sync(mcp_client.discover)(mcp_client.ServerSpec.of(server))
    except mcp_client.McpUnavailable as error:
        McpServer.objects.filter(pk=server.pk).update(discovery_error=str(error)[:1000])
        return Discovery(False, [], [], 0, str(error))
    return store_tools(server, tools)


async def aenabled_tools(organization_id: int) -> list[McpTool]:
    """The discovered tools of the organization's enabled servers (with their server)."""
    query = (
        McpTool.objects.for_organization(organization_id)
        .filter(server__enabled=True, server__organization_id=organization_id)
        .select_related("server")
        .order_by("server__name", "name")
    )
    return [row async for row in query]
