"""The translation check CI runs (`bin/check-translations`, docs/i18n.md).

Three checks, against the tree at `root`:

1. Catalogs: `makemessages` for every shipped language and both domains (django, djangojs) is run
   on a temporary copy of the tree, so the committed catalogs are compared with what the sources
   say today; any untranslated or fuzzy message (as `msgfmt --statistics` counts them) fails.
2. Templates: a deliberately simple heuristic. In every template, strip what is translated or not
   text (`{% translate %}`, `{% blocktranslate %}…{% endblocktranslate %}`, comments, other tags,
   `{{ variables }}`, the content of <script>, <style>, <code> and <pre>), then any text node, or any
   `title`, `placeholder`, `aria-label`, `alt`, `data-confirm` or button `value` attribute, that
   still holds a letter is reported. Proper names in `ALLOWED_WORDS` are not text to translate.
3. Pages: the incident, audit, chat and schedules pages rendered over a seeded organization with
   a marking translation (`ongrid_site/translation_pages.py`): English that reaches a page without
   gettext (a form label left to its field's name, a stored code shown raw, a sentence built in
   Python) is reported with the page it is on.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

LOCALES = ("es", "fr", "zh_Hans")
DOMAINS = ("django", "djangojs")
# Folders that are not the product: their strings are never shown to a user.
NOT_PRODUCT = ("tests", "fakes", "bench", "evals", "var", "node_modules", "static/vendor")
COPY_SKIP = {".venv", ".git", "var", "__pycache__", ".pytest_cache", ".ruff_cache", "test-artifacts"}
ALLOWED_WORDS = {"Ongrid", "ms", "OpenAPI", "JSON"}
TEXT_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt", "data-confirm"}
_LETTER = re.compile(r"[^\W\d_]")
_TRANSLATED = [
    re.compile(r"{%\s*blocktrans(?:late)?\b.*?{%\s*endblocktrans(?:late)?\s*%}", re.DOTALL),
    re.compile(r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", re.DOTALL),
    re.compile(r"{#.*?#}", re.DOTALL),
    re.compile(r"{%.*?%}", re.DOTALL),
    re.compile(r"{{.*?}}", re.DOTALL),
]


def is_text(value: str) -> bool:
    words = [w for w in re.split(r"[\s·—→←:;,.()#$+/-]+", value) if w]
    return any(_LETTER.search(w) and w not in ALLOWED_WORDS for w in words)


class _TextFinder(HTMLParser):
    SKIP = {"script", "style", "code", "pre"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[int, str]] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        values = dict(attrs)
        for name, value in attrs:
            shown = name in TEXT_ATTRIBUTES or (
                name == "value" and tag == "input" and values.get("type") in {"submit", "button"}
            )
            if shown and value and is_text(value):
                self.found.append((self.getpos()[0], f'{name}="{value.strip()}"'))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping and is_text(data):
            self.found.append((self.getpos()[0], data.strip()))


def untranslated_template_text(template: Path) -> list[tuple[int, str]]:
    """(line, text) of what looks like visible text not marked for translation."""
    source = template.read_text(encoding="utf-8")
    for pattern in _TRANSLATED:
        # Keep the line count: a removed span becomes its own newlines.
        source = pattern.sub(lambda m: "\n" * m.group(0).count("\n"), source)
    finder = _TextFinder()
    finder.feed(source)
    finder.close()
    return finder.found


def template_files(root: Path) -> list[Path]:
    found = []
    for path in sorted(root.rglob("*.html")):
        relative = path.relative_to(root).as_posix()
        if "/templates/" not in f"/{relative}" or any(part in COPY_SKIP for part in path.parts):
            continue
        if relative.startswith(NOT_PRODUCT):
            continue
        found.append(path)
    return found


def template_problems(root: Path) -> list[str]:
    return [
        f"{path.relative_to(root)}:{line}: text not marked for translation: {text!r}"
        for path in template_files(root)
        for line, text in untranslated_template_text(path)
    ]


def _copy_tree(root: Path, target: Path) -> None:
    shutil.copytree(root, target, ignore=lambda _dir, names: [n for n in names if n in COPY_SKIP])


def catalog_problems(root: Path) -> list[str]:
    """Run makemessages on a copy of `root` and report untranslated or fuzzy messages."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="ongrid-i18n-") as scratch:
        copy = Path(scratch) / "tree"
        _copy_tree(root, copy)
        env = dict(os.environ, SECRET_KEY=os.environ.get("SECRET_KEY") or "translation-check-only")
        env["ONGRID_DATA_DIR"] = str(Path(scratch) / "data")
        env.pop("DATABASE_URL", None)
        env.pop("REDIS_URL", None)
        ignores = [arg for folder in NOT_PRODUCT for arg in ("--ignore", f"{folder}/*")]
        for domain in DOMAINS:
            command = [sys.executable, "manage.py", "makemessages", "-d", domain, "--no-obsolete", *ignores]
            command += [arg for locale in LOCALES for arg in ("-l", locale)]
            done = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True)
            if done.returncode:
                problems.append(f"makemessages -d {domain} failed: {done.stderr.strip()}")
                continue
            for locale in LOCALES:
                catalog = copy / "locale" / locale / "LC_MESSAGES" / f"{domain}.po"
                problems += _catalog_problems(catalog, f"locale/{locale}/LC_MESSAGES/{domain}.po")
    return problems


def _catalog_problems(catalog: Path, name: str) -> list[str]:
    if not catalog.exists():
        return [f"{name}: missing"]
    stats = subprocess.run(
        ["msgfmt", "--check-format", "--statistics", "-o", os.devnull, str(catalog)],
        capture_output=True,
        text=True,
    )
    if stats.returncode:
        return [f"{name}: msgfmt refused it: {stats.stderr.strip()}"]
    counts = {kind: int(number) for number, kind in re.findall(r"(\d+) (fuzzy|untranslated)", stats.stderr)}
    problems = []
    if counts.get("untranslated"):
        problems.append(f"{name}: {counts['untranslated']} untranslated message(s)")
    if counts.get("fuzzy"):
        problems.append(f"{name}: {counts['fuzzy']} fuzzy message(s)")
    for kind, flag in (("untranslated", "--untranslated"), ("fuzzy", "--only-fuzzy")):
        if counts.get(kind):
            listing = subprocess.run(
                ["msgattrib", flag, "--no-wrap", str(catalog)], capture_output=True, text=True
            ).stdout
            problems += [
                f"    {msgid}" for msgid in re.findall(r'^msgid "(.+)"$', listing, re.MULTILINE)[:10]
            ]
    return problems


def page_problems(root: Path) -> list[str]:
    """Run the rendered-pages check in its own process (it sets Django up on a scratch database)."""
    env = dict(os.environ, SECRET_KEY=os.environ.get("SECRET_KEY") or "translation-check-only")
    done = subprocess.run(
        [sys.executable, "-m", "ongrid_site.translation_pages"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
    )
    found = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode and not found:
        found = [f"the pages check failed: {done.stderr.strip()[-2000:]}"]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fail on untranslated strings (docs/i18n.md).")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--templates-only", action="store_true", help="skip the catalogs (fast)")
    args = parser.parse_args(argv)
    problems = template_problems(args.root)
    if not args.templates_only:
        problems += catalog_problems(args.root)
        problems += page_problems(args.root)
    for problem in problems:
        print(problem)
    print("translations: ok" if not problems else f"translations: {len(problems)} problem line(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
