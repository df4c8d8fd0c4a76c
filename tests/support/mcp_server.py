"""A real MCP server written with the SDK (`MCPServer`, once called FastMCP), in its own process
so a test can also make it disappear. It speaks any of the three transports Ongrid supports:

    python -m tests.support.mcp_server http PORT JOURNAL    # streamable HTTP at /mcp (uvicorn)
    python -m tests.support.mcp_server sse PORT JOURNAL     # the older SSE transport at /sse
    python -m tests.support.mcp_server stdio JOURNAL        # stdio: Ongrid starts it as a command

Tools: `widget_status` (reads) and `restart_widget` (changes something: it appends a line to the
journal file, so a test can prove a rejected call never ran).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.procs import free_port, start, stop, wait_until


def build(journal: Path):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("widgets")

    @server.tool(description="The health of one widget.")
    def widget_status(widget: str) -> str:
        return f"widget {widget} is green (3 replicas ready)"

    @server.tool(description="Restart one widget (it is briefly unavailable).")
    def restart_widget(widget: str, reason: str = "") -> str:
        with journal.open("a") as handle:
            handle.write(f"restarted {widget}\n")
        return f"widget {widget} restarted"

    return server


@dataclass
class McpTestServer:
    url: str
    journal: Path
    process: subprocess.Popen

    def journal_lines(self) -> list[str]:
        return self.journal.read_text().splitlines() if self.journal.exists() else []

    def stop(self) -> None:
        stop(self.process)


def _answers(url: str) -> bool:
    try:
        httpx.get(url, timeout=1)
    except httpx.HTTPError:
        return False
    return True


def _listens(port: int) -> bool:
    """An SSE endpoint never finishes its answer, so readiness is an accepted connection."""
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        return True
    return False


@contextlib.contextmanager
def running_mcp_server(workdir: Path, transport: str = "http") -> Iterator[McpTestServer]:
    """The server over streamable HTTP (`http`, url ends in /mcp) or SSE (`sse`, url ends in /sse)."""
    port = free_port()
    journal = workdir / "journal.txt"
    process = start(
        [sys.executable, "-m", "tests.support.mcp_server", transport, str(port), str(journal)],
        workdir / f"mcp-server-{transport}.log",
    )
    if transport == "sse":
        url, ready = f"http://127.0.0.1:{port}/sse", lambda: _listens(port)
    else:
        url = f"http://127.0.0.1:{port}/mcp"
        ready = lambda: _answers(url)  # noqa: E731
    try:
        wait_until(ready, 30, f"the MCP test server ({transport}) to listen")
        yield McpTestServer(url, journal, process)
    finally:
        stop(process)


def stdio_command(journal: Path) -> str:
    """The command line an McpServer row runs to start this server over stdio (from the repo root)."""
    return f"{sys.executable} -m tests.support.mcp_server stdio {journal}"


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "stdio":
        build(Path(sys.argv[2])).run("stdio")
    else:
        import uvicorn

        port, journal = int(sys.argv[2]), Path(sys.argv[3])
        server = build(journal)
        app = server.sse_app() if mode == "sse" else server.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
