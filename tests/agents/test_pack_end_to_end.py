"""A signed pack, end to end (docs/packs.md): published in a catalog or pushed to a Git repository,
installed by an org admin, and used at once by processes that were already running — a Celery
worker dispatches its persona, which loads its skill on demand (an audited call); an upgrade and a
rollback reach a second Django process; uninstalling takes persona and skill away everywhere.

Real parts: minisign signs the pack, a Celery worker on Redis runs the turns, `git http-backend`
serves the repository, a loopback HTTP server the catalog; the model is the scripted fake OpenAI
server through the real SDK."""

from __future__ import annotations

import hashlib
import json

import pytest

from agents_app.models import Pack, UserAgent, UserSkill
from agents_app.packs import install
from agents_app.personas import registry, skills
from agents_app.runtime.turns import last_answer, start_turn, wait_for_turn
from agents_app.toolsets.skills.manifest import SKILL_TOOL
from audit_app.models import AuditLog
from chat_app import services
from chat_app.models import ChatSession, SessionStatus
from fakes.llm_routing import tool_messages
from fakes.openai_server import call, text, tool_calls
from tests.support.celery_worker import celery_worker_process
from tests.support.django_subprocess import DjangoProcess
from tests.support.git_server import Runbooks, git_http_server
from tests.support.httpd import loopback_site
from tests.support.packs import (
    PERSONA,
    archive_of,
    sign_with_minisign,
    write_pack,
)

pytestmark = pytest.mark.django_db(transaction=True)

TURN_TIMEOUT = 90.0
PERSONA_NAME, SKILL_NAME = "specialist-packs", "pack-runbook"

# A second process that prints the body of the persona it would dispatch now (null when none).
BODY_SCRIPT = """
import json
from agents_app.personas import registry
organization = int(sys.argv[1])
print("ready", flush=True)
for line in sys.stdin:
    persona = registry.get_registry(organization).by_name(line.strip())
    print(json.dumps(persona.body if persona else None), flush=True)
"""


@pytest.fixture(autouse=True)
def fresh_registries():
    registry.reset()
    yield
    registry.reset()


def signed_pack(tmp_path, keys, version: str, body: str = "") -> object:
    """A pack directory signed with `keys`; `body` replaces the persona's prompt text."""
    personas = None
    if body:
        front, _sep, _old = PERSONA.rpartition("---\n")
        personas = {PERSONA_NAME: f"{front}---\n\n{body}\n"}
    directory = write_pack(tmp_path / f"pack-{version}", version=version, personas=personas)
    sign_with_minisign(directory, keys)
    return directory


def dispatch_and_load_the_skill(agents_llm) -> None:
    """Script: the coordinator dispatches the pack's persona, which loads the pack's skill."""
    agents_llm.add(
        "default",
        tool_calls(
            call(
                "AgentTool",
                {
                    "description": "runbook",
                    "subagent_type": PERSONA_NAME,
                    "prompt": "Restart api by the book.",
                },
            )
        ),
        text("Done by the runbook."),
    )
    agents_llm.add(
        PERSONA_NAME,
        tool_calls(call(SKILL_TOOL.name, {"name": SKILL_NAME}, id="skill-1")),
        lambda request: text("Loaded: " + json.loads(tool_messages(request)[-1]["content"])["instructions"]),
    )


def run_turn(member, question: str) -> str:
    chat = services.start_chat(member)
    _, waitable = start_turn(chat, question)
    ended = wait_for_turn(chat.pk, waitable, timeout=TURN_TIMEOUT)
    assert ended.status == SessionStatus.IDLE, ended.error
    return last_answer(chat.pk).content


def test_a_pack_from_a_catalog_is_used_at_once_by_a_running_worker_and_goes_with_uninstall(
    org, org_admin, member, keys, trusted, agents_llm, fake_llm, settings, tmp_path
):
    settings.ONGRID_EXECUTOR = "celery"
    data = archive_of(signed_pack(tmp_path, keys, "1.0.0"))
    with loopback_site() as site, celery_worker_process(fake_llm.base_url, str(tmp_path)):
        site.put("/packs/ops-extras-1.0.0.tar.gz", data)
        index = {
            "packs": [
                {
                    "name": "ops-extras",
                    "version": "1.0.0",
                    "description": "Runbook helpers",
                    "url": "ops-extras-1.0.0.tar.gz",
                    "sha256": hashlib.sha256(data).hexdigest(),
                }
            ]
        }
        site.put("/packs/index.json", json.dumps(index).encode())

        release = install.stage_catalog(org, site.url("/packs/index.json"), "ops-extras", user=org_admin)
        pack = install.install(release, org_admin)

        # The worker started before the install; its next spawn sees the pack.
        dispatch_and_load_the_skill(agents_llm)
        assert run_turn(member, "restart api by the runbook") == "Done by the runbook."
        worker = ChatSession.objects.get(parent_session__isnull=False, agent_id=PERSONA_NAME)
        assert worker.status == SessionStatus.COMPLETED
        assert worker.result.startswith("Loaded: Follow the restart runbook")
        loaded = AuditLog.objects.get(organization=org, tool=SKILL_TOOL.name, persona=PERSONA_NAME)
        assert loaded.status == "ok" and SKILL_NAME in loaded.arguments
        installed = AuditLog.objects.get(organization=org, tool=install.INSTALL_TOOL)
        assert installed.user_id == org_admin.pk and "ops-extras" in installed.arguments

        removed = install.uninstall(pack, org_admin)
        assert PERSONA_NAME in json.dumps(removed) and SKILL_NAME in json.dumps(removed)
        assert not UserAgent.objects.filter(organization=org).exists()
        assert not UserSkill.objects.filter(organization=org).exists()
        assert SKILL_NAME not in skills.available_skills(org.pk)

        # The same worker no longer finds the persona: the coordinator is told, nothing runs.
        agents_llm.add(
            "default",
            tool_calls(
                call("AgentTool", {"description": "again", "subagent_type": PERSONA_NAME, "prompt": "Again."})
            ),
            lambda request: text("Tool said: " + tool_messages(request)[-1]["content"][:300]),
        )
        answer = run_turn(member, "restart api again")
    assert PERSONA_NAME in answer and answer.startswith("Tool said:")
    assert ChatSession.objects.filter(parent_session__isnull=False, agent_id=PERSONA_NAME).count() == 1


def test_an_upgrade_and_a_rollback_from_git_reach_a_second_process(org, org_admin, keys, trusted, tmp_path):
    repository = Runbooks(tmp_path / "git", name="packs").create()
    first = signed_pack(tmp_path, keys, "1.0.0", body="Version one: read the runbook aloud.")
    second = signed_pack(tmp_path, keys, "1.1.0", body="Version two: follow the runbook silently.")

    def publish(directory, message: str) -> None:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                repository.write_bytes(f"ops/{path.relative_to(directory).as_posix()}", path.read_bytes())
        repository.commit(message)

    other = DjangoProcess(BODY_SCRIPT, [str(org.pk)], tmp_path)
    try:
        with git_http_server(repository) as server:
            assert other.readline() == "ready"
            assert json.loads(other.ask(PERSONA_NAME)) is None

            publish(first, "ops-extras 1.0.0")
            release = install.stage_git(org, server.url(), "main", "ops", user=org_admin)
            pack = install.install(release, org_admin)
            assert json.loads(other.ask(PERSONA_NAME)) == "Version one: read the runbook aloud."

            publish(second, "ops-extras 1.1.0")
            upgrade = install.upgrade_from_source(pack, org_admin)
            pack = install.install(upgrade, org_admin)
            assert pack.version == "1.1.0"
            assert json.loads(other.ask(PERSONA_NAME)) == "Version two: follow the runbook silently."

        pack = install.rollback(pack, org_admin)  # from the stored release: no fetch
        assert pack.version == "1.0.0"
        assert json.loads(other.ask(PERSONA_NAME)) == "Version one: read the runbook aloud."
        assert Pack.objects.get(organization=org).version == "1.0.0"
        assert AuditLog.objects.filter(organization=org, tool=install.ROLLBACK_TOOL).count() == 1
    finally:
        other.close()
