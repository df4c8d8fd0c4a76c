"""The agent catalog in the registry's exact format (R6), for tests that cannot load the registry."""

from __future__ import annotations

from agents_app.kernel.prompt import CATALOG_HEADER
from agents_app.personas.schema import Persona


def catalog_of(personas: list[Persona]) -> str:
    lines = [CATALOG_HEADER]
    for persona in personas:
        when = next((line.strip() for line in persona.when_to_use.splitlines() if line.strip()), "")
        lines.append(f"- **{persona.name}** — {persona.description}")
        lines.append(f"  When to use: {when}")
    return "\n".join(lines)
