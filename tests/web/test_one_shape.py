"""One builder, one shape: every surface that shows a session tree, a proposal or a persona gets it
from the same function, so they can never disagree (docs/architecture.md)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from agents_app.forms import UserAgentForm
from agents_app.gate import proposals
from agents_app.models import UserAgent
from agents_app.personas import user_agents
from agents_app.personas.schema import KNOWN_KEYS, STORED_FIELDS, parse_persona, persona_fields
from agents_app.runtime.core import Runtime
from chat_app import services
from chat_app.models import ChatSession
from fakes.openai_server import call, text, tool_calls
from tests.support import audit_rows
from web_app.agents.api import UserAgentSerializer
from web_app.chat.transcript import build_turns
from web_app.tree import build_tree, walk

pytestmark = pytest.mark.django_db(transaction=True)


def dispatch(subagent: str, prompt: str, id: str) -> dict:
    return call("AgentTool", {"description": prompt[:40], "subagent_type": subagent, "prompt": prompt}, id=id)


async def a_real_tree(member, agents_llm) -> ChatSession:
    chat = await sync_to_async(services.start_chat)(member)
    agents_llm.add(
        "default",
        tool_calls(
            dispatch("specialist-disk", "On web-01 find what fills /var.", "d1"),
            dispatch("specialist-compute", "On web-01 list the top CPU users.", "c1"),
        ),
        text("web-01: rotated logs fill /var; java burns CPU."),
    )
    agents_llm.add("specialist-disk", text("/var/log holds 38G of rotated logs"))
    agents_llm.add("specialist-compute", text("java pid 4242 uses 340% CPU"))
    await services.abegin_turn(chat.pk, "web-01 is slow and its disk is filling up")
    assert (await Runtime().run_turn(chat.pk)).status == "completed"
    disk = await ChatSession.objects.aget(parent_session=chat, agent_id="specialist-disk")
    await sync_to_async(audit_rows.gated_write)(disk, "w1")
    return chat


def without_worker_messages(node: dict, root: bool = True) -> dict:
    """The audit tree as a chat's owner may see it: no worker's raw transcript."""
    timeline = [e for e in node["timeline"] if root or e["type"] != "message"]
    for entry in timeline:
        if entry["type"] == "call":
            entry["reviews"] = [without_worker_messages(r, False) for r in entry["reviews"]]
    children = [without_worker_messages(c, False) for c in node["children"]]
    return {**node, "timeline": timeline, "children": children}


async def test_the_chat_api_tree_is_the_audit_tree(member, auditor, agents_llm):
    chat = await a_real_tree(member, agents_llm)

    def fetch() -> tuple[dict, dict]:
        owner = APIClient()
        owner.force_authenticate(member)
        chat_tree = owner.get(f"/api/sessions/{chat.pk}/tree/").json()
        reader = Client()
        reader.force_login(auditor)
        audit_tree = reader.get(reverse("api-audit-tree", args=[chat.pk])).json()["tree"]
        return chat_tree, audit_tree

    chat_tree, audit_tree = await sync_to_async(fetch)()
    assert {c["persona"] for c in chat_tree["children"]} == {"specialist-disk", "specialist-compute"}
    assert any(e["type"] == "message" for c in audit_tree["children"] for e in c["timeline"])
    assert chat_tree == without_worker_messages(audit_tree)


async def test_the_chat_transcript_draws_the_tree_it_is_built_from(member, agents_llm):
    chat = await a_real_tree(member, agents_llm)

    def both() -> tuple[list, dict]:
        return build_turns(chat), build_tree(chat, messages="root")

    turns, tree = await sync_to_async(both)()
    tiles = [item.data for turn in turns for item in turn.items if item.kind == "tile"]
    nodes = [node for node in walk(tree) if node["id"] != chat.pk]
    assert sorted(t["id"] for t in tiles) == sorted(n["id"] for n in nodes)
    assert {t["id"]: t["status"] for t in tiles} == {n["id"]: n["status"] for n in nodes}
    assert turns[-1].answer and "rotated logs" in turns[-1].answer


def test_one_proposal_shape_for_the_card_the_tree_and_the_api(org, member, org_admin):
    chat = audit_rows.session(org, member, title="restart nginx")
    audit_rows.message(chat, "user", "restart nginx on web-01")
    worker = audit_rows.session(org, member, parent=chat, agent_id="specialist-web")
    audit_rows.gated_write(worker, "w-dual")
    held = proposals.create_proposal(
        session_id=worker.pk,
        tool_call_id="w-dual",
        tool="host_restart_service",
        tool_class="write",
        persona="specialist-web",
        permission_mode="dual-sign-required",
        arguments={"service": "nginx"},
        payload={"action": "restart nginx", "target": "nginx@web-01", "blast_radius": "one host"},
    )
    proposals.record_review(held.pk, True, "SOP: pass")
    signer = APIClient()
    signer.force_authenticate(org_admin)
    signed = signer.post(reverse("proposal-approve", args=[held.pk]), {}, format="json").json()
    held.refresh_from_db()
    described = proposals.describe_proposal(held)
    tree = build_tree(chat)
    in_tree = next(e for e in tree["children"][0]["timeline"] if e.get("tool_call_id") == "w-dual")
    [card] = [item.data for turn in build_turns(chat) for item in turn.items if item.kind == "proposal"]
    assert signed["human_approver"] == "oscar" and signed["decision"] == "approve"
    assert set(signed) == set(described) == set(in_tree["proposal"]) == set(card)
    assert in_tree["proposal"] == described == tree["children"][0]["proposals"][0] == card


def test_one_persona_schema_for_file_row_form_and_api(org):
    text = (
        "---\nname: disk-checker\ndescription: Checks disks\nwhen_to_use: disk questions\n"
        "tools: [host_du_summary]\nmax_turns: 7\nmodel: gpt-4o\nfavourite_colour: teal\n"
        "---\nYou check disks.\n"
    )
    persona = parse_persona(text, source="user")
    fields = persona_fields(persona)
    assert tuple(fields) == STORED_FIELDS and set(KNOWN_KEYS) < set(STORED_FIELDS)
    agent = UserAgent(organization=org, **fields)
    assert persona_fields(agent.to_persona()) == fields  # row → persona → fields round trip
    assert tuple(UserAgentForm.Meta.fields) == ("organization", *STORED_FIELDS, "enabled")
    assert set(STORED_FIELDS) <= set(UserAgentSerializer.Meta.fields)
    assert user_agents.PERSONA_FIELDS == STORED_FIELDS
    exported = parse_persona(user_agents.to_markdown(agent), source="user")
    assert persona_fields(exported) == fields and exported.extra == {"favourite_colour": "teal"}
