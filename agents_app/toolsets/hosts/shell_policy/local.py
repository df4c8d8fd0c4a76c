"""The Ongrid host itself (the local transport): its own folders are off limits.

There the file system can be consulted, so every path is resolved as the kernel would
(`os.path.realpath`: symbolic links, `/proc/self/root`, `/proc/self/cwd`) and refused inside
Ongrid's data, code and virtualenv folders or /proc and /sys; a recursive read rooted above one
of them is refused too, and may not follow symbolic links.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from .grammar import Parsed
from .refusal import PolicyRefusal
from .secrets import inside, normalise


def resolve_local(path: str) -> tuple[str, str]:
    """(textual normal form, real path) of a path on the Ongrid host: symbolic links and the
    /proc/*/root, /proc/*/cwd style links are followed as the kernel would."""
    normal = normalise(path)
    try:
        real = os.path.realpath(normal)
    except (OSError, ValueError):
        real = normal
    return normal, real


def protected_roots(protected: Sequence[str]) -> list[str]:
    """Both forms (as written, and resolved) of every protected folder: a path is compared with
    each, so a link into the folder and the folder's own link both count."""
    roots: list[str] = []
    for folder in protected:
        for form in resolve_local(folder):
            if form not in roots:
                roots.append(form)
    return roots


def check_local_path(path: str, roots: Sequence[str], what: str = "") -> None:
    """Refuse a path on the Ongrid host that resolves into one of `roots` (see `protected_roots`)."""
    for form in resolve_local(path):
        for root in roots:
            if inside(form, root):
                raise PolicyRefusal(
                    what or path,
                    f"{root} is off limits on the Ongrid host: Ongrid's own data folder, code, virtualenv, "
                    "/proc and /sys hold its database and secrets",
                )


def check_local_walk(program: str, root: str, roots: Sequence[str]) -> None:
    """Refuse a recursive read on the Ongrid host whose root contains a protected folder."""
    check_local_path(root, roots, what=f"{program} {root}")
    for form in resolve_local(root):
        for protected in roots:
            if inside(protected, form):
                raise PolicyRefusal(
                    f"{program} {root}",
                    f"the recursive read would cover {protected}, which is off limits on the Ongrid host "
                    "(Ongrid's own data folder, code, virtualenv, /proc, /sys); pick a directory that does "
                    "not contain it",
                )


def check_local_command(parsed: Parsed, argv: Sequence[str], roots: Sequence[str]) -> None:
    """On the Ongrid host: every path (file words, and any word starting with /) must resolve
    outside the protected folders, and no recursive read may be rooted above one of them."""
    words = list(parsed.files)
    for word in argv[1:]:
        value = word.partition("=")[2] if word.startswith("-") and "=" in word else word
        if value.startswith("/"):
            words.append(value)
    for word in words:
        check_local_path(word, roots)
    for root, _ in parsed.recursive:
        if parsed.follows_links:
            raise PolicyRefusal(
                f"{parsed.program} {root}",
                "on the Ongrid host a recursive read may not follow symbolic links",
            )
        check_local_walk(parsed.program, root, roots)
