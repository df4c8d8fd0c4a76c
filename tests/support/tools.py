"""Call a built-in tool's handler the way the runtime does, from a synchronous test.

async_to_sync runs the handler on its own event loop while its sync_to_async database work comes
back to the test's thread, so the handler sees the test's (rolled-back) transaction.
"""

from __future__ import annotations

import json

from asgiref.sync import async_to_sync

from agents_app.toolsets.contract import ToolContext
from agents_app.toolsets.registry import load_builtin_tools


def run_tool(tool_name: str, organization, /, **arguments):
    """Run tool `tool_name` for `organization`; the result must be plain JSON, as the LLM gets it."""
    tool = load_builtin_tools()[tool_name]
    result = async_to_sync(tool.handler)(ToolContext(organization_id=organization.id), **arguments)
    json.dumps(result, allow_nan=False)
    return result
