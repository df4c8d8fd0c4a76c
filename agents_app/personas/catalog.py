"""The agent catalog (docs/personas.md): the machine-generated list of valid `subagent_type` values that the
coordinator's system prompt and per-turn reminder carry. The offline model parses this exact
format, so it is produced here and nowhere else."""

from __future__ import annotations

from collections.abc import Iterable

from agents_app.personas.schema import COORDINATOR, REPORTER, REVIEWER, Persona

HEADER = "Available specialists (valid `subagent_type` values):"
# Never dispatchable: the coordinator itself (it would spawn itself) and the reviewer (only the
# review gate may run it; ad-hoc "reviews" would gate nothing), and the reporter (schedules only).
NOT_DISPATCHABLE = frozenset({COORDINATOR, REVIEWER, REPORTER})


def _one_line(text: str) -> str:
    return " ".join(text.split())


def first_line(text: str) -> str:
    """The first non-empty line, whitespace collapsed."""
    for line in text.splitlines():
        if line.strip():
            return _one_line(line)
    return ""


def specialists(personas: Iterable[Persona]) -> list[Persona]:
    """The personas the coordinator may dispatch to, ordered by name."""
    chosen = {p.name: p for p in personas if p.name not in NOT_DISPATCHABLE}
    return [chosen[name] for name in sorted(chosen)]


def agent_catalog(personas: Iterable[Persona]) -> str:
    """The catalog text: a header, then one bullet per specialist with its first when-to-use line."""
    lines = [HEADER]
    for persona in specialists(personas):
        lines.append(f"- **{persona.name}** — {_one_line(persona.description)}")
        lines.append(f"  When to use: {first_line(persona.when_to_use).rstrip(':')}")
    if len(lines) == 1:
        lines.append("- (none)")
    return "\n".join(lines)
