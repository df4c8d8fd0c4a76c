"""With no LLM configured (the offline stand-in model), "why are the payments pods restarting?"
is still answered from the cluster's own state: the coordinator dispatches specialist-k8s, which
lists the pods through the real tool and reports the crash-looping ones."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents_app.runtime.core import Runtime
from audit_app.models import AuditLog
from chat_app import services
from chat_app.models import ChatSession
from ops_app.models import DataSource
from tests.support.kubernetes import PAYMENTS_PODS, seed_payments

pytestmark = [pytest.mark.usefixtures("fresh_gate_caches"), pytest.mark.django_db(transaction=True)]


async def test_the_offline_model_answers_a_pods_question_from_the_cluster(member, org, kube_api):
    seed_payments(kube_api)
    await DataSource.objects.acreate(
        organization=org,
        kind=DataSource.Kind.KUBERNETES,
        name="prod",
        url=kube_api.url,
        auth=DataSource.Auth.BEARER,
        secret="reader-token",
        ca_bundle=kube_api.ca_pem,
        is_default=True,
    )
    chat = await sync_to_async(services.start_chat)(member)
    await services.abegin_turn(chat.pk, "Why are the payments pods restarting?")
    result = await Runtime().run_turn(chat.pk)

    assert result.status == "completed"
    worker = await ChatSession.objects.aget(parent_session=chat)
    assert worker.agent_id == "specialist-k8s"
    listing = await AuditLog.objects.aget(session=worker, tool="k8s_get")
    assert listing.status == "ok" and PAYMENTS_PODS[0] in listing.result
    assert f"{PAYMENTS_PODS[0]} (CrashLoopBackOff)" in result.text
    assert "internal error" not in result.text  # k8s_top across namespaces works (or says why not)
    assert any(r.path == "/api/v1/pods" for r in kube_api.requests)
