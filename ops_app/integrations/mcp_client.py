"""Talking to an organization's MCP servers with the `mcp` SDK (docs/integrations.md).

- `discover(spec)` opens a fresh session and lists the server's tools (the admin's "Discover").
- `call_tool(spec, name, arguments)` runs one tool on a reused session: one per event loop,
  organization and server. The SDK's transports hold anyio task groups that must be entered and
  left by one task, so each session is owned by a background task that serves calls from a queue.
  Any failure closes that session; the next call opens a new one (reconnect on failure). A server
  that cannot be reached raises `McpUnavailable`, whose message the model reads.

Credentials (the server's headers) stay inside `ServerSpec.headers` and are never part of a
message, a log line or a repr.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
from django.conf import settings
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED

from ops_app.core import egress, outbound
from ops_app.integrations.datasources import parse_headers
from ops_app.models import McpServer

log = logging.getLogger(__name__)
CONNECT_TIMEOUT = 10.0


class McpUnavailable(Exception):
    """The server could not be reached or broke the session (the message names no credential)."""


class McpCallError(Exception):
    """The server answered the call with a protocol error (unknown tool, invalid params...)."""


@dataclass(frozen=True)
class ServerSpec:
    id: int
    organization_id: int
    name: str
    transport: str
    url: str
    command: str
    timeout: float
    version: str  # changes whenever the row is edited: an edited server gets a fresh session
    headers: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, server: McpServer) -> ServerSpec:
        return cls(
            id=server.pk,
            organization_id=server.organization_id,
            name=server.name,
            transport=server.transport,
            url=server.url,
            command=server.command,
            timeout=server.timeout,
            version=server.updated_at.isoformat() if server.updated_at else "",
            headers=parse_headers(server.headers),
        )


@dataclass(frozen=True)
class RemoteTool:
    name: str
    description: str
    input_schema: dict


def _transport(spec: ServerSpec, stack: contextlib.AsyncExitStack) -> Any:
    if spec.transport == McpServer.Transport.STDIO:
        # Checked again here, not only when the row is saved: turning the setting off stops
        # every stored stdio server from running, without editing them.
        if not settings.CONFIG.mcp_allow_stdio:
            raise McpUnavailable(
                f"the MCP server {spec.name!r} uses stdio, which is disabled on this Ongrid "
                "(ONGRID_MCP_ALLOW_STDIO)"
            )
        argv = shlex.split(spec.command)
        return stdio_client(StdioServerParameters(command=argv[0], args=argv[1:]))
    # HTTP and SSE go through the egress policy: checked here for a clear answer before the SDK
    # starts its tasks, and again by the client's transport on every connection it opens.
    egress.check_url(spec.url, outbound.allowed())
    if spec.transport == McpServer.Transport.SSE:
        return sse_client(
            spec.url, headers=spec.headers, timeout=CONNECT_TIMEOUT, httpx_client_factory=outbound.mcp_client
        )
    http = outbound.mcp_client(
        headers=spec.headers, timeout=httpx2.Timeout(CONNECT_TIMEOUT, read=spec.timeout)
    )
    stack.push_async_callback(http.aclose)
    return streamable_http_client(spec.url, http_client=http)


def _unavailable(spec: ServerSpec, error: BaseException) -> McpUnavailable:
    reason = _reason(error)
    where = spec.url or "its command"
    return McpUnavailable(f"the MCP server {spec.name!r} is unavailable ({where}): {reason}")


def _reason(error: BaseException) -> str:
    """The innermost cause of an (exception group of) transport failures, in a few words: its kind
    only (`outbound.failure_reason`: refused by the egress policy, connection refused...), never
    its text, which may quote whatever the URL answered (discovery errors are shown to the admin)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, MCPError):
        return (
            "the server closed the connection"
            if error.code == CONNECTION_CLOSED
            else f"MCP error {error.code}"
        )
    if isinstance(error, httpx2.HTTPStatusError):
        return outbound.status_reason(error.response.status_code)
    return outbound.failure_reason(error)


def _answer(error: MCPError) -> str:
    """The server's own words for a call it refused (unknown tool, invalid params...), for the model."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text}"[:300] if text else type(error).__name__


@contextlib.asynccontextmanager
async def opened(spec: ServerSpec) -> AsyncIterator[Client]:
    """A connected, initialised client for the duration of the block."""
    async with contextlib.AsyncExitStack() as stack:
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT + spec.timeout):
                client = await stack.enter_async_context(
                    Client(_transport(spec, stack), read_timeout_seconds=spec.timeout)
                )
        except McpUnavailable:
            raise
        except Exception as error:  # noqa: BLE001 - every way of failing to connect is "unavailable"
            raise _unavailable(spec, error) from None
        yield client


async def discover(spec: ServerSpec) -> list[RemoteTool]:
    """The tools the server offers now (every page of the listing)."""
    tools: list[RemoteTool] = []
    async with opened(spec) as client:
        cursor = None
        try:
            while True:
                page = await client.list_tools(cursor=cursor, cache_mode="refresh")
                for tool in page.tools:
                    schema = dict(tool.input_schema or {"type": "object", "properties": {}})
                    tools.append(RemoteTool(tool.name, tool.description or "", schema))
                cursor = page.next_cursor
                if not cursor:
                    return tools
        except Exception as error:  # noqa: BLE001
            raise _unavailable(spec, error) from None


# --- reused sessions for tool calls ---------------------------------------------------------------

Operation = Callable[[Client], Awaitable[Any]]


class _Session:
    """One open session owned by one task; calls are queued to it and answered through futures."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.queue: asyncio.Queue[tuple[Operation, asyncio.Future] | None] = asyncio.Queue()
        self.alive = True
        self.task = asyncio.get_running_loop().create_task(self._own(), name=f"mcp:{spec.name}")

    async def run(self, operation: Operation) -> Any:
        future: asyncio.Future = asyncio.get_running_loop().create_future()
        await self.queue.put((operation, future))
        return await future

    async def _own(self) -> None:
        pending: asyncio.Future | None = None
        try:
            async with opened(self.spec) as client:
                while True:
                    item = await self.queue.get()
                    if item is None:
                        return
                    operation, pending = item
                    if pending.cancelled():
                        continue
                    try:
                        result = await operation(client)
                    except MCPError as error:
                        if error.code == CONNECTION_CLOSED:  # the transport died (SSE says it so)
                            if not pending.done():
                                pending.set_exception(_unavailable(self.spec, error))
                            return
                        if not pending.done():  # an answer, not a broken session: keep it
                            pending.set_exception(McpCallError(_answer(error)))
                        pending = None
                        continue
                    except Exception as error:  # noqa: BLE001 - the session is suspect now: drop it
                        if not pending.done():
                            pending.set_exception(_unavailable(self.spec, error))
                        return
                    if not pending.done():
                        pending.set_result(result)
                    pending = None
        except BaseException as error:  # noqa: BLE001 - failing to connect, or the transport died
            failure = error if isinstance(error, McpUnavailable) else _unavailable(self.spec, error)
            self._fail(pending, failure)
            if isinstance(error, asyncio.CancelledError):
                raise
        finally:
            self.alive = False
            self._fail(None, McpUnavailable(f"the session with MCP server {self.spec.name!r} was closed"))

    def _fail(self, pending: asyncio.Future | None, error: Exception) -> None:
        if pending is not None and not pending.done():
            pending.set_exception(error)
        while not self.queue.empty():
            item = self.queue.get_nowait()
            if item is not None and not item[1].done():
                item[1].set_exception(error)

    def close(self) -> None:
        self.queue.put_nowait(None)


_SESSIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _session_for(spec: ServerSpec) -> _Session:
    per_loop: dict[tuple[int, int], _Session] = _SESSIONS.setdefault(asyncio.get_running_loop(), {})
    key = (spec.organization_id, spec.id)
    session = per_loop.get(key)
    if session is not None and session.alive and session.spec == spec:
        return session
    if session is not None and session.alive:
        session.close()  # the server was edited: its old session goes
    per_loop[key] = session = _Session(spec)
    return session


async def call_tool(spec: ServerSpec, name: str, arguments: dict) -> Any:
    """Run `name` on the server through the reused session; returns the SDK's CallToolResult."""

    async def operation(client: Client) -> Any:
        return await client.call_tool(name, arguments, read_timeout_seconds=spec.timeout)

    return await _session_for(spec).run(operation)
