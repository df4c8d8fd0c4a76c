"""Programs that list, read and summarise files: what a file holds, how big it is, where it is.

Reading is the point here; what they must not do is follow output forever (`tail -f`) or walk
into secrets, which is why the recursive ones record their walks for the later checks.
"""

from __future__ import annotations

from ..grammar import Custom, Grammar, Parsed
from .common import FOLLOW, recursive_walk


def _ls(parsed: Parsed) -> None:
    parsed.follows_links = parsed.has("-L", "--dereference")
    if parsed.has("-R", "--recursive"):
        recursive_walk(parsed, contents=False)


def _du(parsed: Parsed) -> None:
    parsed.follows_links = parsed.has("-L", "--dereference")
    recursive_walk(parsed, contents=False)


_SUMS = Grammar("bctwz", "binary check tag text zero ignore-missing quiet status strict warn")
_TAIL_DENIED = {name: FOLLOW for name in ("-f", "-F", "--follow", "--retry", "--pid")}


PROGRAMS: dict[str, Grammar | Custom] = {
    "ls": Grammar(
        "aAbBcCdDfFgGhHiI:klLmnNopqQrRsStT:uUvw:xXZ1",
        "all almost-all author escape block-size= ignore-backups color? directory dired classify? "
        "file-type format= full-time group-directories-first no-group human-readable si "
        "dereference-command-line dereference-command-line-symlink-to-dir hide= hyperlink? "
        "indicator-style= inode ignore= kibibytes dereference literal numeric-uid-gid "
        "hide-control-chars show-control-chars quote-name quoting-style= reverse recursive size sort= "
        "time= time-style= tabsize= width= context zero",
        rule=_ls,
    ),
    "cat": Grammar(
        "AbeEnstTuv", "show-all number-nonblank show-ends number squeeze-blank show-tabs show-nonprinting"
    ),
    "head": Grammar("c:n:qvz", "bytes= lines= quiet silent verbose zero-terminated", numeric=True),
    "tail": Grammar(
        "c:n:qs:vz",
        "bytes= lines= quiet silent sleep-interval= verbose zero-terminated debug",
        denied=_TAIL_DENIED,
        numeric=True,
    ),
    "zcat": Grammar("fhlLqtvV", "force list license quiet test verbose"),
    "stat": Grammar("Lfc:t", "dereference file-system format= printf= terse cached="),
    "file": Grammar(
        "bcde:EF:f:hiklLm:nNrsSvzZ0P:",
        "brief checking-printout exclude= exclude-quiet= extension separator= files-from= no-dereference "
        "dereference mime mime-type mime-encoding keep-going list magic-file= no-buffer no-pad print0 "
        "raw special-files uncompress uncompress-noreport parameter= apple",
        denied={
            "-C": "compiling a magic file writes it",
            "--compile": "compiling a magic file writes it",
            "-p": "restoring access times writes to the file's metadata",
            "--preserve-date": "restoring access times writes to the file's metadata",
        },
        files=("-f", "--files-from", "-m", "--magic-file"),
    ),
    "readlink": Grammar(
        "efmnqsvz",
        "canonicalize canonicalize-existing canonicalize-missing no-newline quiet silent verbose zero",
    ),
    "realpath": Grammar(
        "eLmPqsz",
        "canonicalize-existing canonicalize-missing logical physical quiet relative-to= relative-base= "
        "strip no-symlinks zero",
    ),
    "basename": Grammar("as:z", "multiple suffix= zero", operands="data"),
    "dirname": Grammar("z", "zero", operands="data"),
    "md5sum": _SUMS,
    "sha1sum": _SUMS,
    "sha256sum": _SUMS,
    "du": Grammar(
        "0abB:cd:DhHklLmPsStxX:",
        "null all apparent-size block-size= bytes total max-depth= human-readable inodes "
        "dereference-args dereference count-links no-dereference separate-dirs si summarize threshold= "
        "time? time-style= exclude-from= exclude= one-file-system files0-from=",
        files=("-X", "--exclude-from", "--files0-from"),
        rule=_du,
    ),
    "df": Grammar(
        "aB:hHiklPt:Tvx:",
        "all block-size= human-readable si inodes local no-sync sync output? portability print-type "
        "type= exclude-type= total",
    ),
}
