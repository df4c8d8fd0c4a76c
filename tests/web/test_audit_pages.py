"""The audit pages over the tree of a real turn (fake LLM through the real SDK): coordinator →
two workers → a gated write with its reviewer session hung under the call it judged."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from asgiref.sync import sync_to_async
from django.test import Client
from django.urls import reverse

from agents_app.gate import proposals
from agents_app.runtime import dedupe
from agents_app.runtime.core import Runtime
from audit_app.models import AuditLog, LLMCall
from chat_app import services
from chat_app.models import ChatSession
from fakes.openai_server import call, text, tool_calls
from tests.support import audit_rows

pytestmark = pytest.mark.django_db(transaction=True)

PRICES = {"fake-model": {"input": 2.0, "output": 4.0}, "gpt-4o-mini": {"input": 0.15, "output": 0.6}}


@pytest.fixture(autouse=True)
def fresh_dedupe(monkeypatch):
    monkeypatch.setattr(dedupe, "DISPATCHES", dedupe.DispatchCache())


@pytest.fixture
def priced(settings):
    settings.CONFIG = dataclasses.replace(settings.CONFIG, model_prices=PRICES)


def dispatch(subagent: str, prompt: str, description: str, id: str) -> dict:
    return call("AgentTool", {"description": description, "subagent_type": subagent, "prompt": prompt}, id=id)


async def real_tree(member, agents_llm) -> tuple[ChatSession, dict]:
    """Drive one real turn, then add the gated write the review gate will produce."""
    chat = await sync_to_async(services.start_chat)(member)
    agents_llm.add(
        "default",
        tool_calls(
            dispatch("specialist-disk", "On web-01 find what fills /var.", "Disk usage on web-01", "d1"),
            dispatch("specialist-compute", "On web-01 list the top CPU users.", "CPU on web-01", "c1"),
        ),
        text("web-01: rotated logs fill /var; java burns CPU. nginx was restarted after review."),
    )
    agents_llm.add("specialist-disk", text("/var/log holds 38G of rotated logs"))
    agents_llm.add("specialist-compute", text("java pid 4242 uses 340% CPU"))
    await services.abegin_turn(chat.pk, "web-01 is slow and its disk is filling up")
    result = await Runtime().run_turn(chat.pk)
    assert result.status == "completed"
    disk = await ChatSession.objects.aget(parent_session=chat, agent_id="specialist-disk")
    write, reviewer = await sync_to_async(audit_rows.gated_write)(disk, "w1")
    return chat, {"disk": disk, "write": write, "reviewer": reviewer}


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def session_ids(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'data-session="(\d+)"', html)]


async def test_the_tree_of_a_real_turn_renders_every_node_and_call(member, auditor, agents_llm, priced):
    chat, extra = await real_tree(member, agents_llm)

    def check() -> None:
        tree_ids = set(ChatSession.objects.filter(root_session=chat).values_list("pk", flat=True)) | {chat.pk}
        assert len(tree_ids) == 4  # coordinator, two workers, the reviewer
        calls = list(AuditLog.objects.filter(session_id__in=tree_ids))
        assert {c.tool for c in calls} >= {"AgentTool", "host_restart_service"}

        page = login(auditor).get(reverse("audit-session", args=[chat.pk]))
        assert page.status_code == 200
        html = page.content.decode()
        assert set(session_ids(html)) == tree_ids
        for row in calls:
            assert f'data-call="{row.pk}"' in html
        for persona in ("default", "specialist-disk", "specialist-compute", "reviewer"):
            assert f'<strong class="persona">{persona}</strong>' in html
        assert "Disk usage on web-01" in html and "CPU on web-01" in html
        # the reviewer is drawn inside the gated call's entry, after it and before the compute worker
        write_at = html.index(f'data-call="{extra["write"].pk}"')
        reviewer_at = html.index(f'id="session-{extra["reviewer"].pk}"')
        disk_at = html.index(f'id="session-{extra["disk"].pk}"')
        assert disk_at < write_at < reviewer_at
        assert "Reviewed by:" in html[write_at:reviewer_at]
        # tokens of the whole tree = every LLM call recorded for it; cost from the price table
        tokens = LLMCall.objects.filter(session_id__in=tree_ids)
        prompt = sum(t.prompt_tokens for t in tokens)
        completion = sum(t.completion_tokens for t in tokens)
        assert f"{prompt + completion} ({prompt} in, {completion} out)" in html
        fake = [t for t in tokens if t.model == "fake-model"]
        assert len(fake) == 4  # two coordinator steps, one per worker
        usd = sum(t.prompt_tokens * 2.0 + t.completion_tokens * 4.0 for t in fake) / 1e6
        usd += (300 * 0.15 + 40 * 0.6) / 1e6  # the reviewer's row (gpt-4o-mini)
        assert f"${usd:.4f}" in html

    await sync_to_async(check)()


async def test_tool_call_detail_shows_arguments_result_and_the_review(member, auditor, agents_llm):
    chat, extra = await real_tree(member, agents_llm)

    def check() -> None:
        client = login(auditor)
        write = extra["write"]
        page = client.get(reverse("audit-call", args=[write.pk]))
        assert page.status_code == 200
        html = page.content.decode()
        assert "{&quot;device&quot;: &quot;web-01&quot;, &quot;service&quot;: &quot;nginx&quot;}" in html
        assert "nginx restarted" in html and "15 characters" in html
        assert f'data-session="{extra["reviewer"].pk}"' in html and "Decision: approve" in html
        dispatch_row = AuditLog.objects.get(session=chat, tool="AgentTool", tool_call_id="d1")
        page = client.get(reverse("audit-call", args=[dispatch_row.pk]))
        assert "specialist-disk" in page.content.decode()
        assert "Reviewed by" not in page.content.decode()

    await sync_to_async(check)()


async def test_printable_page_and_json_export_hold_the_whole_tree(member, auditor, agents_llm):
    chat, extra = await real_tree(member, agents_llm)

    def check() -> None:
        client = login(auditor)
        ids = {chat.pk} | set(ChatSession.objects.filter(root_session=chat).values_list("pk", flat=True))
        printed = client.get(reverse("audit-session-print", args=[chat.pk])).content.decode()
        assert set(session_ids(printed)) == ids
        assert "/var/log holds 38G of rotated logs" in printed and "Decision: approve" in printed
        assert "topbar" not in printed  # no navigation on paper

        response = client.get(reverse("api-audit-export", args=[extra["reviewer"].pk]), {"format": "json"})
        assert response.status_code == 200
        assert 'attachment; filename="ongrid-session-' in response["Content-Disposition"]
        body = json.loads(response.content)
        tree = body["tree"]
        assert tree["id"] == chat.pk  # exporting any node exports its whole tree
        workers = {child["persona"]: child for child in tree["children"]}
        assert set(workers) == {"specialist-disk", "specialist-compute"}
        gated = [e for e in workers["specialist-disk"]["timeline"] if e.get("tool") == "host_restart_service"]
        assert gated[0]["arguments"] == '{"device": "web-01", "service": "nginx"}'
        assert [r["id"] for r in gated[0]["reviews"]] == [extra["reviewer"].pk]
        agent_calls = [e for e in tree["timeline"] if e.get("tool") == "AgentTool"]
        assert {e["worker"] for e in agent_calls} == {w["id"] for w in workers.values()}
        assert body["totals"]["tokens"]["total"] > 0

    await sync_to_async(check)()


def test_session_list_pages_with_a_cursor_and_rejects_a_forged_one(org, auditor):
    for n in range(7):
        audit_rows.session(org, auditor, title=f"incident {n}")
    client = login(auditor)
    seen = []
    url = reverse("audit-sessions") + "?top=on&limit=3"
    pages = 0
    while url:
        html = client.get(url).content.decode()
        pages += 1
        seen += re.findall(r"incident (\d)", html)
        following = re.search(r'rel="next" href="\?([^"]+)"', html)
        url = f"{reverse('audit-sessions')}?{following.group(1).replace('&amp;', '&')}" if following else None
    assert pages == 3
    assert seen == [str(n) for n in reversed(range(7))]
    bad = client.get(reverse("audit-sessions"), {"cursor": "yesterday"})
    assert bad.status_code == 400 and b"not valid" in bad.content


def test_bad_filters_get_a_clear_error(org, auditor):
    page = login(auditor).get(reverse("audit-sessions"), {"status": "exploded", "since": "not a date"})
    assert page.status_code == 400
    html = page.content.decode()
    assert "Select a valid choice" in html and "Enter a valid date/time" in html


@pytest.mark.django_db
def test_a_gated_call_shows_its_proposal_and_human_approver(org, member, auditor, org_admin):
    """A dual-sign write signed by an org admin: the call page and the tree name the approver."""
    chat = audit_rows.session(org, member, title="restart nginx")
    worker = audit_rows.session(org, member, parent=chat, agent_id="specialist-web")
    write, reviewer = audit_rows.gated_write(worker, "w-dual")
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
    proposals.attach_reviewer(held.pk, reviewer.pk)
    proposals.record_review(held.pk, True, "SOP: pass")
    proposals.sign(held, org_admin, True, "")
    client = login(auditor)
    html = client.get(reverse("audit-call", args=[write.pk])).content.decode()
    proposal = html[html.index('<div class="proposal">') :]
    assert "<dt>human_approver</dt><dd>oscar</dd>" in proposal and "nginx@web-01" in proposal
    tree = client.get(reverse("api-audit-tree", args=[chat.pk])).json()["tree"]
    gated = next(e for e in tree["children"][0]["timeline"] if e.get("tool") == "host_restart_service")
    assert gated["proposal"]["id"] == held.pk
    assert gated["proposal"]["human_approver"] == "oscar" and gated["proposal"]["decision"] == "approve"
    assert gated["reviews"][0]["id"] == reviewer.pk


async def test_a_real_gated_write_hangs_its_reviewer_and_proposal_under_the_call(
    org, member, auditor, agents_llm
):
    """Coordinator → disk and ops workers → the ops worker's acknowledge_incident passes the real
    review gate (a reviewer session approves) → the audit page shows it all where it belongs."""
    from tests.support.gate import ack_arguments, make_incident

    incident = await sync_to_async(make_incident)(org)
    chat = await sync_to_async(services.start_chat)(member)
    agents_llm.add(
        "default",
        tool_calls(
            dispatch("specialist-disk", "On web-01 find what fills /var.", "Disk usage on web-01", "d1"),
            dispatch("specialist-ops", f"Acknowledge incident {incident.pk}.", "Ack the incident", "o1"),
        ),
        text("Disk checked and the incident acknowledged after review."),
    )
    agents_llm.add("specialist-disk", text("/var/log holds 38G of rotated logs"))
    agents_llm.add(
        "specialist-ops",
        tool_calls(call("acknowledge_incident", ack_arguments(incident), id="ack-1")),
        text("Acknowledged."),
    )
    agents_llm.add("reviewer", text("Decision: approve\nSOP: RB-12 covers acknowledging\nRollback: re-open"))
    await services.abegin_turn(chat.pk, "check the disk and acknowledge the incident")
    assert (await Runtime().run_turn(chat.pk)).status == "completed"

    def check() -> None:
        ops = ChatSession.objects.get(parent_session=chat, agent_id="specialist-ops")
        reviewer = ChatSession.objects.get(root_session=chat, agent_id="reviewer")
        gated = AuditLog.objects.get(session=ops, tool="acknowledge_incident")
        assert reviewer.parent_session_id == ops.pk and gated.status == "ok"
        client = login(auditor)
        html = client.get(reverse("audit-session", args=[chat.pk])).content.decode()
        assert len(set(session_ids(html))) == 4  # coordinator, two workers, the reviewer
        call_at = html.index(f'data-call="{gated.pk}"')
        reviewer_at = html.index(f'id="session-{reviewer.pk}"')
        assert html.index(f'id="session-{ops.pk}"') < call_at < reviewer_at
        detail = client.get(reverse("audit-call", args=[gated.pk])).content.decode()
        proposal = detail[detail.index('<div class="proposal">') :]
        assert "<dt>decision</dt><dd>approve</dd>" in proposal
        assert f"<dt>target</dt><dd>incident:{incident.pk}</dd>" in proposal
        link = reverse("audit-session", args=[reviewer.pk])
        assert f'<dt>reviewer_session</dt><dd><a href="{link}">reviewer #{reviewer.pk}' in proposal
        assert "<dt>executed_at</dt><dd>—</dd>" not in proposal

    await sync_to_async(check)()


async def test_each_model_call_shows_its_prompt_and_cached_tokens(member, auditor, agents_llm):
    usage = {"prompt_tokens": 2048, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 1792}}
    agents_llm.add("default", text("cached answer", usage=usage))
    chat = await sync_to_async(services.start_chat)(member)
    await services.abegin_turn(chat.pk, "anything")
    await Runtime().run_turn(chat.pk)

    def check() -> None:
        row = LLMCall.objects.get(session_id=chat.pk)
        html = login(auditor).get(reverse("audit-session", args=[chat.pk])).content.decode()
        cells = re.search(rf'<tr data-llm-call="{row.pk}">(.*?)</tr>', html, re.S).group(1)
        assert re.findall(r"<td>(\d+)</td>", cells) == ["2048", "1792", "12"]

    await sync_to_async(check)()
