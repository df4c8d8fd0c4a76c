"""The allowlist: every program `host_bash` may run, with the grammar of its options.

One module per family of programs; each holds a `PROGRAMS` table of name → `Grammar` (a GNU
getopt_long command line, see `..grammar`) or `Custom` (a program with its own conventions and
its own parser). A program's rule, if any, vets the parsed command: read verbs only, no output
files, no stdin-fed modes, commands that end.
"""

from __future__ import annotations

from ..grammar import Custom, Grammar
from . import files, find, network, openssl, processes, services, system, text

FAMILIES = (files, find, text, processes, system, services, network, openssl)

PROGRAMS: dict[str, Grammar | Custom] = {
    name: grammar for family in FAMILIES for name, grammar in family.PROGRAMS.items()
}
