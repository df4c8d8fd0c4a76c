"""Which tools an agent gets (docs/runtime.md): the persona's whitelist minus its blacklist, then the
structural rules no persona file can override (workers never nest; read-only never mutates)."""

from __future__ import annotations

import logging
from fnmatch import fnmatchcase

from agents_app.personas.schema import Persona
from agents_app.toolsets.contract import Tool
from agents_app.toolsets.names import control_tools

logger = logging.getLogger(__name__)


def coordinator_read_set(available: dict[str, Tool]) -> list[str]:
    """The default toolbag: every read tool that does not run on a host."""
    return [name for name, tool in available.items() if tool.tool_class == "read" and not tool.on_host]


def build_toolbag(persona: Persona, available: dict[str, Tool], *, coordinator: bool) -> list[Tool]:
    """The tools `persona` may call, in a stable order (the order of `available`)."""
    if persona.tools is None:
        wanted = set(coordinator_read_set(available))
    else:
        wanted = set()
        for pattern in persona.tools:
            matches = [name for name in available if fnmatchcase(name, pattern)]
            if not matches:
                logger.warning("persona %s lists unknown tool %r; ignored", persona.name, pattern)
            wanted.update(matches)
    for pattern in persona.disallowed_tools:
        wanted = {name for name in wanted if not fnmatchcase(name, pattern)}
    if not coordinator:
        wanted -= set(control_tools())
    if persona.permission_mode == "read-only":
        wanted = {name for name in wanted if not available[name].mutates}
    return [tool for name, tool in available.items() if name in wanted]
