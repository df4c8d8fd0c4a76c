"""Hot reload of mounted persona and skill files (docs/personas.md, "Hot reload"): an edit on disk is
live within seconds in a running server, a broken edit keeps the last good version and shows a
warning in the admin, new files appear and deleted ones go, and readers never see a half-loaded set.

No sleep is used as synchronisation: every wait polls what a user would look at (the registry's
files generation, `/api/agents/`, the admin page) with a deadline."""

from __future__ import annotations

import dataclasses
import json
import sys
import threading
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from agents_app.personas import hot_reload, registry
from tests.support import procs
from tests.support.servers import Daphne, running, stack_env

DEADLINE = 15  # seconds: "within a few seconds", with room for a loaded CI machine


def persona_text(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\nwhen_to_use: w\n---\nbody of {name}\n"


def skill_text(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\nskill body of {name}\n"


BROKEN = "---\nname: specialist-hot\ndescription: [unclosed\n---\nbody\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def mounted(tmp_path, monkeypatch):
    """ONGRID_AGENTS_DIRS = one temporary directory, for this process's registry."""
    root = tmp_path / "agents"
    root.mkdir()
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG, agents_dirs=[root]))
    registry.reset()
    yield root
    hot_reload.stop()
    registry.reset()


def description(name: str) -> str | None:
    persona = registry.file_registry().by_name(name)
    return persona.description if persona else None


# ---------------------------------------------------------------------------------------------
# In-process: reload_files and the watcher thread


def test_a_broken_edit_keeps_the_last_good_version_and_says_so(mounted):
    path = write(mounted / "hot.md", persona_text("specialist-hot", "first"))
    assert description("specialist-hot") == "first"
    write(path, BROKEN)
    registry.reload_files()
    assert description("specialist-hot") == "first"
    (warning,) = [w for w in registry.file_registry().warnings() if str(path) in w]
    assert "the last version that parsed stays loaded" in warning
    write(path, persona_text("specialist-hot", "fixed"))
    registry.reload_files()
    assert description("specialist-hot") == "fixed"
    assert not [w for w in registry.file_registry().warnings() if str(path) in w]


def test_a_new_broken_file_adds_nothing_but_a_warning(mounted):
    registry.file_registry()
    path = write(mounted / "new.md", BROKEN)
    registry.reload_files()
    assert description("specialist-hot") is None
    assert [w for w in registry.file_registry().warnings() if str(path) in w]


def test_a_reload_rebuilds_an_organizations_overlay_checks(mounted, org):
    """An overlay built before the reload lints against the old skills: it is rebuilt, so the
    admin's 'unknown skill' warning goes once the skill file exists."""
    write(
        mounted / "hot.md",
        persona_text("specialist-hot", "uses a skill").replace("w\n", "w\nskills: [hot-skill]\n"),
    )
    assert any("unknown skill(s): hot-skill" in w for w in registry.get_registry(org.pk).warnings())
    write(mounted / "skills" / "hot-skill.md", skill_text("hot-skill", "a mounted skill"))
    generation = registry.reload_files()
    assert registry.files_generation() == generation
    warnings = registry.get_registry(org.pk).warnings()
    assert not any("hot-skill" in w for w in warnings), warnings
    assert registry.get_skill_registry().by_name("hot-skill").description == "a mounted skill"


def test_a_broken_mounted_skill_is_a_warning_in_the_admin(mounted, client, org_admin):
    path = write(mounted / "skills" / "s.md", skill_text("hot-skill", "fine"))
    registry.get_skill_registry()
    write(path, "---\nname: hot-skill\ndescription: [unclosed\n---\nbody\n")
    registry.reload_files()
    client.force_login(org_admin)
    page = client.get("/admin/agents_app/useragent/").content.decode()
    assert str(path) in page and "the last version that parsed stays loaded" in page
    assert registry.get_skill_registry().by_name("hot-skill").description == "fine"


def test_readers_never_see_a_half_loaded_set(mounted, monkeypatch):
    """Forty files switch between two sets of names; a reader looping meanwhile sees one set or
    the other, never a mix (a reload parses aside and swaps in one assignment)."""
    names = {side: {f"specialist-{side}{i}" for i in range(40)} for side in "ab"}

    def write_side(side: str) -> None:
        for i in range(40):
            write(mounted / f"p{i}.md", persona_text(f"specialist-{side}{i}", side))

    write_side("a")
    registry.file_registry()
    mixed: list[set[str]] = []
    seen: set[frozenset[str]] = set()
    done = threading.Event()

    parse = registry.AgentRegistry._parse

    def parse_and_look(self, text, source, path):  # a reader in the middle of the reload itself
        reader_once()
        return parse(self, text, source, path)

    def reader_once() -> None:
        mounted_names = {p.name for p in registry.file_registry().all() if p.source == "mounted"}
        seen.add(frozenset(mounted_names))
        if mounted_names not in (names["a"], names["b"]):
            mixed.append(mounted_names)

    def reader() -> None:
        while not done.is_set():
            reader_once()

    monkeypatch.setattr(registry.AgentRegistry, "_parse", parse_and_look)
    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the reader thread interleaves with the swap as often as it can
    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for side in "baba":
            write_side(side)
            registry.reload_files()
    finally:
        done.set()
        thread.join(10)
        sys.setswitchinterval(switch)
    assert not mixed, f"a reader saw a half-loaded set of {len(mixed[0])} personas"
    assert {frozenset(names["a"]), frozenset(names["b"])} <= seen


@pytest.mark.parametrize("mode", ["watch", "poll"])
def test_the_watcher_applies_edits_new_files_and_deletions(mounted, monkeypatch, mode):
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG, agents_reload=mode))
    hot = write(mounted / "hot.md", persona_text("specialist-hot", "first"))
    assert description("specialist-hot") == "first"
    watcher = hot_reload.start()
    assert watcher is not None and watcher.wait_ready(DEADLINE)
    assert hot_reload.start() is watcher  # one watcher per process

    def after_change(change, check, what: str) -> None:
        generation = registry.files_generation()
        change()
        procs.wait_until(lambda: registry.files_generation() > generation and check(), DEADLINE, what)

    after_change(
        lambda: write(hot, persona_text("specialist-hot", "second")),
        lambda: description("specialist-hot") == "second",
        "the edited description",
    )
    after_change(
        lambda: write(mounted / "team" / "new.md", persona_text("specialist-new", "new")),
        lambda: description("specialist-new") == "new",
        "the new file's persona",
    )
    after_change(
        lambda: hot.unlink(), lambda: description("specialist-hot") is None, "the deleted persona to go"
    )
    after_change(
        lambda: write(mounted / "skills" / "s.md", skill_text("hot-skill", "watched")),
        lambda: registry.get_skill_registry().by_name("hot-skill") is not None,
        "the new skill",
    )
    hot_reload.stop()
    assert not watcher.alive()


def test_an_error_while_reloading_does_not_stop_the_watcher(mounted):
    calls: list[int] = []

    def flaky() -> int:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("boom")
        return registry.reload_files()

    watcher = hot_reload.Watcher([mounted], on_change=flaky).start()
    try:
        assert watcher.wait_ready(DEADLINE)
        write(mounted / "one.md", persona_text("specialist-one", "one"))
        procs.wait_until(lambda: calls, DEADLINE, "the first (failing) reload")
        write(mounted / "two.md", persona_text("specialist-two", "two"))
        procs.wait_until(
            lambda: description("specialist-two") == "two", DEADLINE, "the reload after the error"
        )
        assert watcher.alive()
    finally:
        watcher.stop()
    assert not watcher.alive()


def test_off_and_nothing_mounted_start_no_watcher(mounted, monkeypatch):
    monkeypatch.setattr(settings, "CONFIG", dataclasses.replace(settings.CONFIG, agents_reload="off"))
    assert hot_reload.start() is None
    monkeypatch.setattr(
        settings, "CONFIG", dataclasses.replace(settings.CONFIG, agents_reload="watch", agents_dirs=[])
    )
    assert hot_reload.start() is None


def test_the_reload_mode_is_read_from_the_environment():
    from ongrid_site import config

    assert config.load({"SECRET_KEY": "k"}).agents_reload == "watch"
    assert config.load({"SECRET_KEY": "k", "ONGRID_AGENTS_RELOAD": "Poll"}).agents_reload == "poll"
    with pytest.raises(config.ConfigError, match="ONGRID_AGENTS_RELOAD"):
        config.load({"SECRET_KEY": "k", "ONGRID_AGENTS_RELOAD": "sometimes"})


# ---------------------------------------------------------------------------------------------
# End to end: a real daphne with ONGRID_AGENTS_DIRS on a temporary directory


def _get(url: str, **headers: str) -> str:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


@pytest.mark.django_db(transaction=True)
def test_a_mounted_file_edited_on_disk_is_live_in_a_running_server(tmp_path, fake_llm, member, org_admin):
    from ops_app.models import ApiToken

    root = tmp_path / "agents"
    hot = write(root / "hot.md", persona_text("specialist-hot", "before the edit"))
    _, token = ApiToken.issue(member)
    browser = Client()
    browser.force_login(org_admin)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"
    env = stack_env(tmp_path, fake_llm.base_url, ONGRID_AGENTS_DIRS=str(root))
    server = Daphne(env, tmp_path)

    def catalog() -> dict[str, str]:
        body = json.loads(_get(server.base + "/api/agents/", Authorization=f"Token {token}"))
        return {agent["name"]: agent["description"] for agent in body["agents"]}

    def admin_page() -> str:
        return _get(server.base + "/admin/agents_app/useragent/", Cookie=cookie)

    def eventually(check, what: str):
        try:
            return procs.wait_until(check, DEADLINE, what)
        except TimeoutError as exc:
            pytest.fail(f"{exc}\n--- daphne log:\n{server.log.read_text(errors='replace')[-3000:]}")

    with running(server):
        assert (
            catalog()["specialist-hot"] == "before the edit"
        )  # the first request starts the watcher (it re-reads once watching)
        write(hot, persona_text("specialist-hot", "after the edit"))
        eventually(lambda: catalog().get("specialist-hot") == "after the edit", "the edited description")

        write(hot, BROKEN)
        eventually(lambda: "last version that parsed stays loaded" in admin_page(), "the admin warning")
        assert catalog()["specialist-hot"] == "after the edit"

        write(root / "added.md", persona_text("specialist-added", "a new file"))
        eventually(lambda: catalog().get("specialist-added") == "a new file", "the new file's persona")

        hot.unlink()
        eventually(lambda: "specialist-hot" not in catalog(), "the deleted file's persona to go")
        assert "last version that parsed" not in admin_page()


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_celery_worker_reloads_the_mounted_files_too(tmp_path, fake_llm):
    """The worker (solo pool: the process that runs the turns) watches the same directories; its
    log says when it re-read them (once when watching starts, then after each change)."""
    from tests.support.servers import Worker, private_redis

    root = tmp_path / "agents"
    hot = write(root / "hot.md", persona_text("specialist-hot", "before"))

    def reloads() -> int:
        return worker.log.read_text(errors="replace").count("agent files reloaded after")

    with private_redis(tmp_path) as redis:
        env = stack_env(tmp_path, fake_llm.base_url, redis.url, ONGRID_AGENTS_DIRS=str(root))
        worker = Worker(env, tmp_path)
        with running(worker):
            procs.wait_until(lambda: reloads() >= 1, DEADLINE, f"the worker to watch (log: {worker.log})")
            write(hot, persona_text("specialist-hot", "after"))
            procs.wait_until(lambda: reloads() >= 2, DEADLINE, f"the worker to reload (log: {worker.log})")
