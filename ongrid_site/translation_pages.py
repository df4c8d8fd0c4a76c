"""The rendered-pages part of the translation check (`bin/check-translations`, docs/i18n.md).

The template heuristic (ongrid_site.translation_check) reads template files, so it never sees
English that reaches a page another way: a form field whose label defaults to its English name, a
stored code shown raw (`idle`), a sentence built in Python without gettext ("alert X firing"). This
check renders the pages themselves: the incident page, the incidents list, the audit list and a
session's audit record, a chat, the reports list, a report and a scheduled run's page, over a small
seeded organization, with a *marking* translation active. Every message that goes through gettext
comes out as ⟦message⟧, so whatever visible text is left outside the marks, and is not one of the
seeded rows' own values (titles, names, tool names) or a proper name, was never translated.

Run alone: `python -m ongrid_site.translation_pages` (it makes its own SQLite database in a
temporary directory; never the configured one).
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from html.parser import HTMLParser

OPEN, CLOSE = "\u27e6", "\u27e7"
INNERMOST = re.compile(f"{OPEN}[^{OPEN}{CLOSE}]*{CLOSE}")
# Proper names and symbols that are the same in every language.
PROPER_NAMES = {
    *("Ongrid", "UTC", "API", "Web", "JSON", "OpenAPI", "ms", "MTTA", "MTTR", "LLM", "MCP", "SSH"),
    *("Slack", "Telegram", "Feishu", "Alertmanager", "Prometheus"),
}
TEXT_ATTRIBUTES = {"title", "placeholder", "aria-label", "alt", "data-confirm"}
AT = dt.datetime(2026, 3, 2, 10, 0, tzinfo=dt.UTC)
COVERED = (
    *("incident", "incidents", "audit", "audit session", "audit print", "chat"),
    *("reports", "report", "report print", "schedule run"),
)


class _Text(HTMLParser):
    """Visible text nodes and text attributes of a page, outside <script>, <style>, <code>, <pre>."""

    SKIP = {"script", "style", "code", "pre", "textarea"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        for name, value in attrs:
            if name in TEXT_ATTRIBUTES and value:
                self.found.append(value)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping and data.strip():
            self.found.append(data)


def without_marks(page: str) -> str:
    """`page` with every marked message taken out, innermost first (a message's placeholders may
    hold other messages, and tags: "⟦From <time>…</time> to …⟧")."""
    while True:
        page, count = INNERMOST.subn(" ", page)
        if not count:
            return page


def untranslated_text(page: str, data: set[str]) -> list[str]:
    """The pieces of `page` a reader sees in English: text outside the marks that holds a word
    which is neither one of the seeded `data` values nor a proper name."""
    parser = _Text()
    parser.feed(without_marks(page))
    parser.close()
    problems = []
    for text in parser.found:
        rest = text
        for value in sorted(data, key=len, reverse=True):
            rest = rest.replace(value, " ")
        words = [w for w in re.split(r"[^\w]+", rest) if re.search(r"[^\W\d_]", w)]
        if any(w not in PROPER_NAMES for w in words):
            problems.append(" ".join(text.split()))
    return problems


@contextmanager
def marking(language: str) -> Iterator[None]:
    """While active, `language`'s catalog answers every message as ⟦message⟧ (contexts dropped),
    so the pages say which of their words went through gettext."""
    from django.utils.translation import trans_real

    real = trans_real.translation(language)

    class Marking(type(real)):
        def __init__(self) -> None:  # noqa: D107 - a view over `real`, not a new catalog
            self.__dict__.update(real.__dict__)

        def gettext(self, message: str) -> str:
            return f"{OPEN}{message.rpartition(chr(4))[2]}{CLOSE}"

        def ngettext(self, singular: str, plural: str, number: int) -> str:
            return self.gettext(singular if number == 1 else plural)

    trans_real._translations[language] = Marking()
    try:
        yield
    finally:
        trans_real._translations[language] = real


def seed() -> tuple[dict[str, str], set[str], dict[str, object]]:
    """A small organization with one of everything the covered pages show; returns the pages'
    URLs, the seeded values that are data (not words to translate), and the users to log in as."""
    from agents_app.api import GET_INCIDENT_DETAIL
    from agents_app.models import MutatingProposal  # noqa: F401 - the gate's table exists
    from audit_app.models import AuditLog
    from chat_app import services
    from incidents_app.models import Investigation
    from ops_app.models import Alert, ChangeEvent, Device, Incident
    from ops_app.tenancy import roles
    from ops_app.tenancy.accounts import create_organization, create_user
    from schedules_app.models import Report, Schedule, ScheduleRun

    org = create_organization("Pages check", "pages-check")
    member = create_user("alice", "pages-check-pass", org, roles.MEMBER)
    auditor = create_user("audrey", "pages-check-pass", org, roles.AUDITOR)
    device = Device.objects.create(organization=org, name="db-01", address="10.0.0.9")
    incident = Incident.objects.create(
        organization=org, title="Checkout 5xx", severity="critical", status="acknowledged",
        started_at=AT, affected_services=["checkout"], device=device, acknowledged_at=AT,
    )  # fmt: skip
    Alert.objects.create(
        organization=org,
        incident=incident,
        name="HighLatency",
        fingerprint="h",
        starts_at=AT,
        status="firing",
    )
    ChangeEvent.objects.create(
        organization=org, occurred_at=AT + dt.timedelta(minutes=3), actor=member, actor_name="alice",
        action="update", resource_type="incident", resource_id=str(incident.pk), resource_name=incident.title,
        summary=f"alice acknowledged incident {incident.title}", before={"status": "firing"},
        after={"status": "acknowledged"},
    )  # fmt: skip
    findings = {
        "summary": "Checkout fails because db-01 is down.",
        "root_cause": "db-01 stopped answering.",
        "patient_zero": {"kind": "device", "name": "db-01", "device_id": device.pk},
        "causal_chain": ["db-01 down", "checkout times out"],
        "symptoms": ["HighLatency firing"],
        "evidence": [{"tool_call_id": "c1", "finding": "12% 5xx"}],
        "confidence": 0.8,
        "confidence_word": "high",
        "next_actions": [{"action": "Restart db-01"}],
        "ruled_out": [{"hypothesis": "a deploy", "why": "no change"}],
    }
    Investigation.objects.create(
        organization=org, incident=incident, trigger="alertmanager", status="done", report=findings,
        finished_at=AT + dt.timedelta(minutes=2),
    )  # fmt: skip
    work = services.open_work_session(org.pk, "incident-investigator", "Investigate Checkout 5xx", "look")
    Investigation.objects.create(
        organization=org, incident=incident, trigger="manual", requested_by=member, status="inconclusive",
        session=work, error="The investigator ended without a valid report.",
        finished_at=AT + dt.timedelta(minutes=8),
    )  # fmt: skip
    AuditLog.objects.create(
        organization=org, session=work, tool=GET_INCIDENT_DETAIL.name, status="ok",
        started_at=AT + dt.timedelta(minutes=5), tool_call_id="c1",
    )  # fmt: skip
    chat = services.start_chat(member, title="disk on db-01")
    services.append_message(chat.pk, "user", "why is the disk full?")
    services.append_message(chat.pk, "assistant", "Rotated logs.")
    schedule = Schedule.objects.create(
        organization=org, name="daily", kind="report", persona="reporter", period="daily", cron="0 6 * * *"
    )
    run = ScheduleRun.objects.create(
        organization=org, schedule=schedule, due_at=AT, trigger="manual", state="finished"
    )
    report = Report.objects.create(
        organization=org, schedule=schedule, run=run, period="daily", period_start=AT - dt.timedelta(days=1),
        period_end=AT, narrative="Calm.",
        figures={"incidents": {"opened": 1, "opened_per_day": [["2026-03-01", 1]]}, "changes": {"total": 1}},
    )  # fmt: skip
    urls = {
        "incident": f"/incidents/{incident.pk}/",
        "incidents": "/incidents/",
        "audit": "/audit/",
        "audit session": f"/audit/sessions/{work.pk}/",
        "chat": f"/chat/{chat.pk}/",
        "reports": "/reports/",
        "report": f"/reports/{report.pk}/",
        "report print": f"/reports/{report.pk}/print/",
        "schedule run": f"/schedules/runs/{run.pk}/",
    }
    data = {
        org.name, "alice", "audrey", device.name, device.address, incident.title, "checkout", "HighLatency",
        GET_INCIDENT_DETAIL.name, "incident-investigator", work.title, chat.title, "why is the disk full?",
        "Rotated logs.", schedule.name, "reporter", "Calm.", "default", "look",
        "offline",  # the offline model's name, in the audit's usage columns
        # The language menu: each language in its own words.
        *("English", "Español", "español", "Français", "français", "简体中文"),
    }  # fmt: skip
    data.update(_strings(findings))
    # What changed in the estate is a record, like an agent's words: its summary and actor stay as
    # written (docs/i18n.md, "Not translated yet").
    for summary, actor in ChangeEvent.objects.filter(organization=org).values_list("summary", "actor_name"):
        data.update({summary, actor})
    urls["audit print"] = f"/audit/sessions/{work.pk}/print/"
    return urls, data, {"member": member, "auditor": auditor}


def _strings(value) -> list[str]:
    """Every string inside a JSON-like value: an agent's report is its own words."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def page_problems(seeded: tuple | None = None, languages: tuple[str, ...] = ("fr",)) -> list[str]:
    """Render every covered page with the marking translation of each of `languages` and report
    the English left on them; `seeded`: what `seed()` returned (seeds the current database if None).
    One language is enough: the marks show which words went through gettext, whatever the language,
    and the catalogs' check (translation_check) makes sure every such word is translated in each."""
    from django.test import Client

    urls, data, users = seeded or seed()
    assert set(urls) == set(COVERED), "seed() renders the covered pages"
    problems = []
    for language in languages:
        with marking(language):
            for name, url in urls.items():
                who = users["auditor"] if name.startswith("audit") else users["member"]
                client = Client(HTTP_ACCEPT_LANGUAGE=language, HTTP_HOST="127.0.0.1")
                client.force_login(who)
                response = client.get(url)
                if response.status_code != 200:
                    problems.append(f"{name} page ({url}): HTTP {response.status_code}")
                    continue
                problems += [
                    f"{name} page ({url}): not translated: {text!r}"
                    for text in dict.fromkeys(untranslated_text(response.content.decode(), data))
                ]
    return problems


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="ongrid-pages-") as scratch:
        os.environ["ONGRID_DATA_DIR"] = scratch
        os.environ.pop("DATABASE_URL", None)
        os.environ.pop("REDIS_URL", None)
        os.environ.setdefault("SECRET_KEY", "translation-check-only")
        os.environ["ONGRID_AUTO_INVESTIGATE"] = "0"  # the agents' own words are not the pages'
        os.environ["ONGRID_LLM"] = "offline"
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ongrid_site.settings")
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0, interactive=False)
        problems = page_problems()
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
