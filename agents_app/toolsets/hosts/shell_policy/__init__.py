"""The read-only policy of `host_bash`: which command lines may run on a host, and why not.

The policy is a parser, not a list of patterns (docs/hosts.md). A command line goes through:

1. `lexer`: POSIX shell quoting. A quoted or backslash-escaped `|`, `;`, `>` or `&` is data;
   only unquoted operator characters are operators. Pipes and `;` / `&&` / `||` are kept;
   redirections, background jobs, subshells, substitutions, variables and newlines are refused.
2. `families`: programs refused by name, with what they would do (delete, write, run another
   program, change users, reach the network...).
3. `programs` and `grammar`: every allowed program has a declared grammar of its options, so an
   option's value is never mistaken for a verb, an operand or an operator; unknown and
   abbreviated options are refused; each program's rule keeps to read verbs, no output files,
   no stdin-fed command modes, no code loading, no egress.
4. `secrets`: every word is checked against a deny list of secret stores after path
   normalisation (`//`, `.`, `..`); recursive reads may not cover /proc, /etc/ssh, homes...
5. `local`: on the Ongrid host itself (`protected` is non-empty: the local transport) every path
   is also resolved on the machine and refused inside Ongrid's own folders, /proc and /sys.

`policy.check` ties them and returns the `Script` that will run. Globs and `~` are not expanded.
"""

from __future__ import annotations

from .grammar import REQUIRED, Grammar
from .local import check_local_path, protected_roots, resolve_local
from .policy import check
from .programs import PROGRAMS
from .refusal import PolicyRefusal
from .secrets import inside

__all__ = [
    "PROGRAMS",
    "REQUIRED",
    "Grammar",
    "PolicyRefusal",
    "check",
    "check_local_path",
    "inside",
    "protected_roots",
    "resolve_local",
]
