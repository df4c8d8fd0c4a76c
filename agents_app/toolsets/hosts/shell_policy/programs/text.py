"""Programs that search and reshape text: grep and the small filters of a pipeline.

Their danger is a second file name or option that writes (`sort -o`, `uniq in out`) or runs a
program (`sort --compress-program`), and grep's recursion, whose roots are vetted later.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..grammar import Custom, Grammar, Parsed
from ..refusal import PolicyRefusal
from .common import RUNS, WRITES


def _uniq(parsed: Parsed) -> None:
    if len(parsed.operands) > 1:
        raise PolicyRefusal(
            "uniq " + " ".join(parsed.operands), "a second file name is an output file uniq would overwrite"
        )


def _grep(parsed: Parsed) -> None:
    patterned = parsed.has("-e", "--regexp", "-f", "--file")
    paths = parsed.operands if patterned else parsed.operands[1:]
    if not patterned and not parsed.operands:
        raise PolicyRefusal(parsed.program, "grep needs a pattern")
    parsed.files.extend(paths)
    recursive = parsed.has("-r", "--recursive") or any(
        value.startswith("recurse") for value in parsed.values("-d", "--directories")
    )
    if recursive:
        if not paths:
            raise PolicyRefusal(f"{parsed.program} -r", "name the directories to search")
        parsed.recursive.extend((path, True) for path in paths)


def _parse_echo(program: str, args: Sequence[str]) -> Parsed:
    return Parsed(program, operands=list(args))


_GREP = Grammar(
    "EFGPe:f:iywxvcm:bnHhqsoaIrd:D:lLTZzA:B:C:U0123456789",
    "extended-regexp fixed-strings basic-regexp perl-regexp regexp= file= ignore-case no-ignore-case "
    "word-regexp line-regexp null-data no-messages invert-match max-count= byte-offset line-number "
    "line-buffered with-filename no-filename label= only-matching quiet silent binary-files= text "
    "directories= devices= recursive include= exclude= exclude-from= exclude-dir= files-without-match "
    "files-with-matches count initial-tab null before-context= after-context= context= color? colour? "
    "binary no-group-separator group-separator=",
    denied={
        "-R": "-R follows symbolic links anywhere; use -r",
        "--dereference-recursive": "-R follows symbolic links anywhere; use -r",
    },
    files=("-f", "--file", "--exclude-from"),
    operands="data",  # the pattern; _grep marks the paths
    rule=_grep,
)


PROGRAMS: dict[str, Grammar | Custom] = {
    "grep": _GREP,
    "egrep": _GREP,
    "fgrep": _GREP,
    "zgrep": _GREP,
    "wc": Grammar(
        "clLmw", "bytes chars lines max-line-length words files0-from= total=", files=("--files0-from",)
    ),
    "sort": Grammar(
        "bcCdfghiMmnrRsS:t:uVzk:",
        "ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting "
        "month-sort human-numeric-sort numeric-sort random-sort random-source= reverse sort= "
        "version-sort check? debug files0-from= key= merge stable buffer-size= field-separator= unique "
        "zero-terminated parallel=",
        denied={
            "-o": WRITES,
            "--output": WRITES,
            "--compress-program": RUNS,
            "-T": "temporary files are written there",
            "--temporary-directory": "temporary files are written there",
            "--batch-size": "only useful with temporary files",
        },
        files=("--random-source", "--files0-from"),
    ),
    "uniq": Grammar(
        "cdDf:is:uw:z",
        "count repeated all-repeated? skip-fields= ignore-case skip-chars= unique zero-terminated "
        "check-chars= group?",
        rule=_uniq,
    ),
    "cut": Grammar(
        "b:c:d:f:nsz",
        "bytes= characters= delimiter= fields= complement only-delimited output-delimiter= zero-terminated",
    ),
    "tr": Grammar("cCdst", "complement delete squeeze-repeats truncate-set1", operands="data"),
    "tac": Grammar("brs:", "before regex separator="),
    "nl": Grammar(
        "b:d:f:h:i:l:n:ps:v:w:",
        "body-numbering= section-delimiter= footer-numbering= header-numbering= line-increment= "
        "join-blank-lines= number-format= no-renumber number-separator= starting-line-number= number-width=",
    ),
    "echo": Custom(_parse_echo),
}
