"""Audit rows are evidence: created once, never changed, deleted only by the retention purge."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from audit_app.immutability import ImmutableAuditRow, purging
from audit_app.models import AuditLog, LLMCall
from chat_app.models import ChatSession
from tests.support import audit_rows

pytestmark = pytest.mark.django_db


@pytest.fixture
def rows(org, member):
    chat = audit_rows.session(org, member, title="restart nginx")
    return chat, audit_rows.tool_call(chat, "query_devices", result="web-01"), audit_rows.llm_call(chat)


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_superuser("root", "root@example.com", "root-pass-123")


def test_saving_a_changed_row_is_refused_and_the_row_stays_as_written(rows):
    _, call, llm = rows
    call.result = "nothing to see"
    with pytest.raises(ImmutableAuditRow):
        call.save()
    llm.prompt_tokens = 1
    with pytest.raises(ImmutableAuditRow):
        llm.save(update_fields=["prompt_tokens"])
    assert AuditLog.objects.get(pk=call.pk).result == "web-01"
    assert LLMCall.objects.get(pk=llm.pk).prompt_tokens == 100


@pytest.mark.parametrize("model", [AuditLog, LLMCall])
def test_queryset_updates_and_deletes_are_refused(rows, model):
    with pytest.raises(ImmutableAuditRow):
        model.objects.all().update(persona="someone-else")
    with pytest.raises(ImmutableAuditRow):
        model.objects.filter(persona="default").delete()
    with pytest.raises(ImmutableAuditRow):
        model.objects.first().delete()
    row = model.objects.first()
    row.persona = "someone-else"
    with pytest.raises(ImmutableAuditRow):
        model.objects.bulk_update([row], ["persona"])
    assert list(model.objects.values_list("persona", flat=True)) == ["default"]


@pytest.mark.django_db(transaction=True)
async def test_async_paths_are_guarded_too(rows, close_async_db_connections):
    _, call, _ = rows
    with pytest.raises(ImmutableAuditRow):
        await AuditLog.objects.filter(pk=call.pk).aupdate(result="")
    with pytest.raises(ImmutableAuditRow):
        await call.adelete()
    assert await AuditLog.objects.filter(pk=call.pk, result="web-01").aexists()


def test_deleting_a_chat_keeps_its_audit_rows(rows):
    chat, call, llm = rows
    chat.delete()
    assert not ChatSession.objects.filter(pk=chat.pk).exists()
    kept = AuditLog.objects.get(pk=call.pk)
    assert kept.session_id is None and kept.result == "web-01"
    assert LLMCall.objects.get(pk=llm.pk).session_id is None


def test_only_the_purge_context_may_delete(rows):
    _, call, llm = rows
    with purging():
        AuditLog.objects.filter(pk=call.pk).delete()
        llm.delete()
    assert not AuditLog.objects.exists() and not LLMCall.objects.exists()
    audit_rows.tool_call(rows[0], "query_devices")
    with pytest.raises(ImmutableAuditRow):  # the permission ended with the block
        AuditLog.objects.all().delete()


@pytest.mark.parametrize(
    ("model", "admin_name"),
    [(AuditLog, "audit_app_auditlog"), (LLMCall, "audit_app_llmcall"), (ChatSession, "chat_app_chatsession")],
)
def test_the_admin_cannot_add_change_or_delete_even_for_a_superuser(client, rows, staff, model, admin_name):
    client.force_login(staff)
    row = model.objects.first()
    assert client.get(reverse(f"admin:{admin_name}_add")).status_code == 403
    assert client.get(reverse(f"admin:{admin_name}_delete", args=[row.pk])).status_code == 403
    assert (
        client.post(reverse(f"admin:{admin_name}_delete", args=[row.pk]), {"post": "yes"}).status_code == 403
    )
    changelist = client.get(reverse(f"admin:{admin_name}_changelist"))
    assert changelist.status_code == 200 and b"delete_selected" not in changelist.content
    bulk = client.post(
        reverse(f"admin:{admin_name}_changelist"),
        {"action": "delete_selected", "_selected_action": [row.pk], "post": "yes"},
    )
    assert bulk.status_code in {200, 302}
    detail = client.get(reverse(f"admin:{admin_name}_change", args=[row.pk]))
    assert detail.status_code == 200 and b'name="_save"' not in detail.content  # view-only page
    client.post(reverse(f"admin:{admin_name}_change", args=[row.pk]), {"title": "edited", "tool": "edited"})
    assert model.objects.filter(pk=row.pk).exists()
    fresh = model.objects.get(pk=row.pk)
    assert getattr(fresh, "title", "") != "edited" and getattr(fresh, "tool", "") != "edited"


def test_auditing_org_admin_sees_only_own_tenant_sessions_in_the_admin(client, org, other_org, org_admin):
    audit_rows.session(org, org_admin, title="ours: disk on web-01")
    audit_rows.session(other_org, None, title="theirs: payroll db")
    client.force_login(org_admin)
    page = client.get(reverse("admin:chat_app_chatsession_changelist"))
    assert page.status_code == 200
    assert b"ours: disk on web-01" in page.content and b"theirs: payroll db" not in page.content


def test_the_recorder_only_ever_creates_audit_rows_and_is_their_only_writer():
    """Audit rows are written by `audit_app.recorder` with create only (the model guards would fail
    any other write), and neither the tool chain nor the kernel touches the audit models."""
    import inspect

    from agents_app.kernel import loop as kernel
    from agents_app.tools import invoke
    from audit_app import recorder

    source = inspect.getsource(recorder)
    assert "AuditLog.objects.create(" in source and "LLMCall.objects.create(" in source
    for forbidden in (".asave(", ".save(", ".aupdate(", ".update(", ".adelete(", ".delete("):
        assert forbidden not in source
    for caller in (invoke, kernel):
        assert "AuditLog" not in inspect.getsource(caller) and "LLMCall" not in inspect.getsource(caller)
