"""Every program of the allowlist has a table row that runs and one that is refused: a program
added to a family module without rows in its test table fails here."""

from __future__ import annotations

import importlib

import pytest

from agents_app.toolsets.hosts.shell_policy import PROGRAMS
from agents_app.toolsets.hosts.shell_policy.programs import FAMILIES


def family_name(family) -> str:
    return family.__name__.rsplit(".", 1)[1]


def table(family):
    return importlib.import_module(f"tests.agents.shell_policy.test_programs_{family_name(family)}")


def programs_in(rows) -> set[str]:
    return {line.split()[0] for line, _ in rows}


def test_each_program_belongs_to_one_family():
    names = [name for family in FAMILIES for name in family.PROGRAMS]
    assert sorted(names) == sorted(PROGRAMS)


@pytest.mark.parametrize("family", FAMILIES, ids=family_name)
def test_every_program_of_the_family_has_an_allowed_and_a_refused_row(family):
    rows = table(family)
    programs = set(family.PROGRAMS)
    assert programs - programs_in(rows.ALLOWED) == set()
    assert programs - programs_in(rows.REFUSED) == set()
