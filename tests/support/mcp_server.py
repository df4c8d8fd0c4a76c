"""A real MCP server written with the SDK (`MCPServer`, once called FastMCP), served over
streamable HTTP by uvicorn in its own process, so a test can also make it disappear.

Tools: `widget_status` (reads) and `restart_widget` (changes something: it appends a line to the
journal file, so a test can prove a rejected call never ran).

    python -m tests.support.mcp_server PORT JOURNAL
"""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def running_mcp_server(workdir: Path) -> Iterator[McpTestServer]:
    port = free_port()
    journal = workdir / "journal.txt"
    process = start(
        [sys.executable, "-m", "tests.support.mcp_server", str(port), str(journal)],
        workdir / "mcp-server.log",
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until(lambda: _answers(url), 30, "the MCP test server to listen")
        yield McpTestServer(url, journal, process)
    finally:
        stop(process)


if __name__ == "__main__":
    import uvicorn

    port, journal = int(sys.argv[1]), Path(sys.argv[2])
    app = build(journal).streamable_http_app()
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
