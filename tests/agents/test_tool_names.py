"""The tool names personas may list (agents_app/toolsets/names.py, used to validate user agents) are
exactly the tools that exist, with the right class."""

from agents_app.toolsets import names as tool_names
from agents_app.toolsets.base import load_builtin_tools


def test_listed_tool_names_match_the_real_catalog():
    tools = load_builtin_tools()
    assert set(tool_names.READ_TOOLS) == {name for name, tool in tools.items() if tool.tool_class == "read"}
    assert set(tool_names.WRITE_TOOLS) == {name for name, tool in tools.items() if tool.mutates}
    assert set(tool_names.CONTROL_TOOLS) == {"AgentTool", "SendMessage", "TaskStop"}
