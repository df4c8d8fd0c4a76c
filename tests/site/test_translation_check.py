"""bin/check-translations (ongrid_site.translation_check): the shipped tree passes; a template
string that is not marked, or marked but not translated, fails it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from ongrid_site import translation_check

ROOT = Path(__file__).resolve().parents[2]


def test_every_shipped_template_marks_its_text():
    assert translation_check.template_problems(ROOT) == []


def test_a_new_string_without_translation_fails_the_check(tmp_path, capsys):
    copy = tmp_path / "tree"
    shutil.copytree(
        ROOT, copy, ignore=lambda _d, names: [n for n in names if n in translation_check.COPY_SKIP]
    )
    page = copy / "templates" / "schedules.html"
    page.write_text(
        "{% load i18n %}<h1>Nightly schedules</h1>\n"
        '<button title="Run it now">{% translate "Run every schedule now" %}</button>\n',
        encoding="utf-8",
    )

    assert translation_check.main(["--root", str(copy)]) == 1

    out = capsys.readouterr().out
    assert "templates/schedules.html:1: text not marked for translation: 'Nightly schedules'" in out
    assert "templates/schedules.html:2: text not marked for translation: 'title=\"Run it now\"'" in out
    for locale in ("es", "fr", "zh_Hans"):
        # makemessages may guess a fuzzy translation from a similar message of the catalog
        # (msgmerge's fuzzy matching), so the new string fails as untranslated or as fuzzy.
        assert re.search(rf"locale/{locale}/LC_MESSAGES/django\.po: 1 (untranslated|fuzzy) message\(s\)", out)
    assert "    Run every schedule now" in out
    assert "djangojs.po" not in out  # the JavaScript catalogs are still complete


def test_a_fuzzy_translation_fails_the_check(tmp_path):
    catalog = tmp_path / "django.po"
    catalog.write_text(
        'msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n\n'
        '#, fuzzy\nmsgid "Save"\nmsgstr "Guardar"\n',
        encoding="utf-8",
    )
    assert translation_check._catalog_problems(catalog, "es") == ["es: 1 fuzzy message(s)", "    Save"]
