"""System prompt composition (R5) and the per-turn reminder (R7)."""

from __future__ import annotations

from agents_app.kernel.prompt import catalog_names, compose_system_prompt, system_reminder
from agents_app.personas.schema import Skill
from tests.support.agents import persona
from tests.support.catalog import catalog_of

CATALOG = catalog_of(
    [
        persona("specialist-disk", description="Disk space and I/O", when_to_use="Disk full\nsecond line"),
        persona("specialist-network", description="Connectivity", when_to_use="Timeouts, DNS"),
    ]
)
SKILLS = [
    Skill("runbook-reading", "Read runbooks", "Cite the runbook section."),
    Skill("promql", "PromQL", "Use rate()."),
]


def test_parts_come_in_r5_order():
    coordinator = persona(
        "default", body="You coordinate.", critical_reminder="Never run host commands yourself."
    )
    prompt = compose_system_prompt("BASE PREAMBLE", coordinator, SKILLS, CATALOG)
    order = [
        "BASE PREAMBLE",
        "You coordinate.",
        "<critical-reminder>\nNever run host commands yourself.\n</critical-reminder>",
        "Available specialists (valid `subagent_type` values):",
        "- **specialist-disk** — Disk space and I/O\n  When to use: Disk full",
        "[能力: runbook-reading]\nCite the runbook section.",
        "[能力: promql]\nUse rate().",
    ]
    positions = [prompt.index(part) for part in order]
    assert positions == sorted(positions)
    assert "second line" not in prompt


def test_empty_base_and_absent_reminder_leave_no_trace():
    worker = persona("specialist-disk", body="You inspect disks.")
    assert compose_system_prompt("", worker, []) == "You inspect disks."


def test_catalog_is_given_to_the_coordinator_only():
    worker = persona("specialist-disk", body="You inspect disks.")
    assert "Available specialists" not in compose_system_prompt("", worker, [], CATALOG)
    assert "Available specialists" in compose_system_prompt("", persona("default", body="Hi"), [], CATALOG)


def test_reminder_repeats_the_critical_reminder_and_valid_subagent_types():
    coordinator = persona("default", critical_reminder="Dispatch deep work.")
    reminder = system_reminder(coordinator, CATALOG)
    assert reminder.startswith("<system-reminder>\n") and reminder.endswith("\n</system-reminder>")
    assert "Dispatch deep work." in reminder
    assert "specialist-disk, specialist-network" in reminder
    assert catalog_names(CATALOG) == ["specialist-disk", "specialist-network"]


def test_worker_reminder_is_never_empty_and_has_no_catalog():
    reminder = system_reminder(persona("specialist-disk"), CATALOG)
    assert "`specialist-disk`" in reminder and "read-only" in reminder
    assert "subagent_type" not in reminder
