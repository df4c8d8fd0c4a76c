"""The knowledge vault: chunking, idempotent ingestion, retrieval quality on the built-in runbooks,
uploads through the API and the admin, tenancy, and the same answers on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection

from agents_app.toolsets.contract import ToolContext, ToolError
from agents_app.toolsets.registry import load_builtin_tools
from ongrid_site.celery import app as celery_app
from ops_app.knowledge import fulltext as knowledge_index
from ops_app.knowledge import vault as knowledge
from ops_app.models import KnowledgeDocument, KnowledgePassage
from ops_app.tasks import sync_knowledge_vault
from tests.support.asyncdb import close_async_db_connections  # noqa: F401 - fixture
from tests.support.required import require

VAULT = Path(django_settings.BASE_DIR) / "vault"

QUESTIONS = [
    ("The disk is full on /var and writes fail with No space left on device", "disk-full.md"),
    ("journald logs filling /var/log", "disk-full.md"),
    ("a process was killed by the OOM killer", "oom.md"),
    ("container exited with code 137 OOMKilled", "oom.md"),
    ("p99 latency is high and requests are slow", "high-latency.md"),
    ("connect is slow and time to first byte is high", "high-latency.md"),
    ("x509 certificate has expired or is not yet valid", "certificate-expiry.md"),
    ("the certificate expires in 5 days, how do I renew it", "certificate-expiry.md"),
    ("roll back a failed deploy", "failed-deploy-rollback.md"),
    ("pods in CrashLoopBackOff after a new version", "failed-deploy-rollback.md"),
]


@pytest.fixture
def vault_org(org):
    knowledge.sync_vault(org, VAULT)
    return org


# --- chunking ------------------------------------------------------------------------------------


def test_markdown_chunks_follow_sections_and_ignore_hashes_in_code():
    text = (
        "# Title\n\nIntro line.\n\n## Symptoms\n\nIt is slow.\n\n"
        "```sh\n# not a heading\ndf -h\n```\n\n### Fix\n\nDo it."
    )
    chunks = knowledge.chunk_markdown(text)
    assert [(c.heading, c.text.splitlines()[0]) for c in chunks] == [
        ("", "Intro line."),
        ("Symptoms", "It is slow."),
        ("Fix", "Do it."),
    ]
    assert "# not a heading" in chunks[1].text


def test_long_sections_are_split_below_the_passage_limit():
    paragraph = "word " * 100
    chunks = knowledge.chunk_markdown("## Long\n\n" + "\n\n".join([paragraph] * 12))
    assert len(chunks) > 1
    assert all(c.heading == "Long" and len(c.text) <= knowledge.MAX_PASSAGE_CHARS for c in chunks)


def test_title_comes_from_front_matter_then_h1_then_file_name():
    assert knowledge.title_of("---\ntitle: From meta\n---\n# H1\n", "f")[0] == "From meta"
    assert knowledge.title_of("# The H1\n\nbody", "f")[0] == "The H1"
    assert knowledge.title_of("no heading", "Fallback")[0] == "Fallback"


# --- ingestion -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_builtin_runbook_is_ingested_with_its_title(vault_org):
    documents = KnowledgeDocument.objects.for_organization(vault_org)
    assert {d.source for d in documents} == {p.name for p in VAULT.glob("*.md")}
    titles = {d.source: d.title for d in documents}
    assert titles["disk-full.md"] == "Runbook: disk full or filling up"
    assert all(d.is_indexed and d.passages.count() >= 3 for d in documents)


@pytest.mark.django_db
def test_reingesting_unchanged_content_is_a_no_op(org, tmp_path):
    (tmp_path / "a.md").write_text("# Alpha\n\n## One\n\nfirst section\n\n## Two\n\nsecond section\n")
    first = knowledge.sync_vault(org, tmp_path)
    passages = list(KnowledgePassage.objects.for_organization(org).values_list("id", flat=True))
    stamp = KnowledgeDocument.objects.get(organization=org).updated_at
    second = knowledge.sync_vault(org, tmp_path)
    assert first.indexed == ["a.md"] and second.indexed == [] and second.unchanged == ["a.md"]
    assert list(KnowledgePassage.objects.for_organization(org).values_list("id", flat=True)) == passages
    assert KnowledgeDocument.objects.get(organization=org).updated_at == stamp


@pytest.mark.django_db
def test_changed_files_are_reindexed_and_removed_files_dropped(org, tmp_path):
    (tmp_path / "a.md").write_text("# Alpha\n\nold words about kafka\n")
    (tmp_path / "b.md").write_text("# Beta\n\nredis eviction\n")
    knowledge.sync_vault(org, tmp_path)
    (tmp_path / "a.md").write_text("# Alpha\n\nnew words about rabbitmq\n")
    (tmp_path / "b.md").unlink()
    report = knowledge.sync_vault(org, tmp_path)
    assert report.indexed == ["a.md"] and report.removed == ["b.md"]
    assert knowledge.search(org.id, "kafka") == []
    assert knowledge.search(org.id, "rabbitmq")[0].title == "Alpha"
    assert knowledge.search(org.id, "redis eviction") == []


@pytest.mark.django_db(transaction=True)
def test_vault_sync_runs_as_a_celery_task(org, tmp_path, celery_worker_if_redis):
    (tmp_path / "runbook.md").write_text(
        "# Queue backlog\n\n## When to use\n\nconsumers lag behind the queue\n"
    )
    result = sync_knowledge_vault.delay(org.id, str(tmp_path))
    assert result.get(timeout=30)["indexed"] == ["runbook.md"]
    assert knowledge.search(org.id, "consumers lag behind")[0].title == "Queue backlog"


# --- retrieval -----------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("question,runbook", QUESTIONS, ids=[q[:40] for q, _ in QUESTIONS])
def test_each_question_finds_its_runbook_first_above_the_threshold(vault_org, question, runbook):
    hits = knowledge.search(vault_org.id, question, top_k=3)
    assert hits[0].source == runbook, [(h.source, h.score) for h in hits]
    assert hits[0].score >= 0.6
    assert all(0 <= h.score <= 1 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


@pytest.mark.django_db
def test_unrelated_questions_stay_below_the_threshold(vault_org):
    assert knowledge.search(vault_org.id, "how to bake sourdough bread") == []
    hits = knowledge.search(vault_org.id, "kubernetes ingress configuration")
    assert hits == [] or hits[0].score < 0.6


@pytest.mark.django_db
def test_another_tenant_never_sees_the_runbooks(vault_org, other_org):
    assert knowledge.search(other_org.id, "disk full no space left on device") == []


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("close_async_db_connections")
async def test_query_knowledge_tool_returns_titles_sources_scores_snippets(vault_org):
    tool = load_builtin_tools()["query_knowledge"]
    result = await tool.handler(
        ToolContext(organization_id=vault_org.id), query="OOM killer killed my process", top_k=2
    )
    assert len(result["results"]) == 2
    top = result["results"][0]
    assert top["title"] == "Runbook: out of memory (OOM killer)" and top["source"] == "oom.md"
    assert top["score"] >= result["follow_threshold"] == 0.6
    assert "oom" in top["passage"].lower() or "killed" in top["passage"].lower()
    assert tool.tool_class == "read"
    with pytest.raises(ToolError, match="non-empty"):
        await tool.handler(ToolContext(organization_id=vault_org.id), query="  ")
    with pytest.raises(ToolError, match="no searchable words"):
        await tool.handler(ToolContext(organization_id=vault_org.id), query="what is it?")
    with pytest.raises(ToolError, match="top_k"):
        await tool.handler(ToolContext(organization_id=vault_org.id), query="disk", top_k=50)


@pytest.mark.django_db
def test_postgresql_and_sqlite_give_the_same_top_result(vault_org):
    """Run under DATABASE_URL=postgres://...: PostgreSQL answers through Django, SQLite FTS5 through
    an in-memory copy of the same passages, and both must rank the same runbook first."""
    require(
        connection.vendor == "postgresql", "PostgreSQL as the test database (DATABASE_URL=postgres://...)"
    )
    passages = list(KnowledgePassage.objects.for_organization(vault_org).select_related("document"))
    lite = sqlite3.connect(":memory:")
    lite.execute(
        f"CREATE TABLE {knowledge_index.PASSAGE_TABLE} (id INTEGER PRIMARY KEY, organization_id INTEGER, "
        "search_text TEXT)"
    )
    for statement in knowledge_index.SQLITE_CREATE:
        lite.execute(statement)
    lite.executemany(
        f"INSERT INTO {knowledge_index.PASSAGE_TABLE} VALUES (?, ?, ?)",
        [(p.id, p.organization_id, p.search_text) for p in passages],
    )
    views = {
        p.id: knowledge.PassageView(
            p.id,
            p.document_id,
            p.document.title,
            p.document.source,
            p.document.source_kind,
            p.heading,
            p.text,
        )
        for p in passages
    }
    for question, runbook in QUESTIONS:
        words = knowledge.query_words(question)
        ids = knowledge_index.sqlite_candidates(
            lite.cursor(), vault_org.id, words, knowledge.CANDIDATE_LIMIT, placeholder="?"
        )
        on_sqlite = knowledge.rank(words, [views[i] for i in ids], len(passages))[0]
        on_postgresql = knowledge.search(vault_org.id, question, top_k=1)[0]
        assert on_sqlite.source == on_postgresql.source == runbook
        assert on_sqlite.score == on_postgresql.score


# --- uploads -------------------------------------------------------------------------------------


@pytest.fixture
def celery_worker_if_redis():
    """With REDIS_URL, tasks really go through the broker: run a worker thread for the test."""
    if not django_settings.CONFIG.uses_redis:
        yield None
        return
    from celery.contrib.testing.worker import start_worker
    from celery.signals import task_postrun
    from django.db import connections

    def close_worker_connections(**kwargs) -> None:
        connections.close_all()  # runs in the worker thread; lets the test database be dropped

    task_postrun.connect(close_worker_connections, weak=False)
    try:
        with start_worker(celery_app, perform_ping_check=False, pool="solo", shutdown_timeout=15) as worker:
            yield worker
    finally:
        task_postrun.disconnect(close_worker_connections)


def wait_indexed(document_id: int, deadline_s: float = 30) -> KnowledgeDocument:
    deadline = time.monotonic() + deadline_s
    while True:
        document = KnowledgeDocument.objects.get(pk=document_id)
        if document.is_indexed:
            return document
        assert time.monotonic() < deadline, "the upload was never indexed"
        time.sleep(0.1)


def make_pdf(text: str) -> bytes:
    """A minimal one-page PDF with `text` in Helvetica (enough for pypdf's text extraction)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


RUNBOOK = b"# Kafka consumer lag\n\n## When to use\n\nConsumer group lag grows and partitions fall behind.\n"


@pytest.mark.django_db(transaction=True)
def test_upload_is_ingested_and_retrievable_and_idempotent(client, org_admin, celery_worker_if_redis):
    client.force_login(org_admin)
    upload = SimpleUploadedFile("kafka-lag.md", RUNBOOK, content_type="text/markdown")
    response = client.post("/api/knowledge/", {"file": upload})
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["document"]["title"] == "Kafka consumer lag" and body["document"]["source"] == "kafka-lag.md"
    document = wait_indexed(body["document"]["id"])
    hits = knowledge.search(org_admin.membership.organization_id, "kafka consumer group lag")
    assert hits[0].document_id == document.pk and hits[0].score >= 0.6
    again = client.post("/api/knowledge/", {"file": SimpleUploadedFile("kafka-lag.md", RUNBOOK)})
    assert again.status_code == 200 and again.json()["status"] == "unchanged"
    assert KnowledgeDocument.objects.filter(source="kafka-lag.md").count() == 1
    listing = client.get("/api/knowledge/").json()["results"]
    assert [(d["source"], d["passages"], d["indexed"]) for d in listing] == [("kafka-lag.md", 1, True)]


@pytest.mark.django_db(transaction=True)
def test_pdf_and_inline_text_uploads(client, org_admin, celery_worker_if_redis):
    client.force_login(org_admin)
    pdf = SimpleUploadedFile("vendor-guide.pdf", make_pdf("Rotate the HSM audit keys every quarter"))
    response = client.post("/api/knowledge/", {"file": pdf, "title": "HSM guide"})
    assert response.status_code == 202, response.content
    wait_indexed(response.json()["document"]["id"])
    inline = client.post(
        "/api/knowledge/",
        {"content": "Restart the ledger sidecar when it stops syncing.", "filename": "ledger.txt"},
        content_type="application/json",
    )
    assert inline.status_code == 202, inline.content
    wait_indexed(inline.json()["document"]["id"])
    org_id = org_admin.membership.organization_id
    assert knowledge.search(org_id, "HSM audit keys")[0].title == "HSM guide"
    assert knowledge.search(org_id, "ledger sidecar syncing")[0].source == "ledger.txt"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "name,data,message",
    [
        ("tool.exe", b"MZ...", "unsupported file type .exe"),
        ("broken.pdf", b"%PDF-1.4 not really", "the PDF cannot be read"),
        ("fake.pdf", b"hello", "not a PDF"),
        ("empty.md", b"   \n", "no text"),
        ("latin1.txt", "café".encode("latin-1"), "not UTF-8"),
    ],
)
def test_bad_uploads_are_refused_with_a_clear_message(client, org_admin, name, data, message):
    client.force_login(org_admin)
    response = client.post("/api/knowledge/", {"file": SimpleUploadedFile(name, data)})
    assert response.status_code == 400
    assert message in str(response.json())
    assert not KnowledgeDocument.objects.exists()


@pytest.mark.django_db
def test_only_org_admins_upload_and_everyone_sees_only_their_tenant(
    client, member, auditor, outsider, vault_org
):
    for user in (member, auditor):
        client.force_login(user)
        response = client.post("/api/knowledge/", {"file": SimpleUploadedFile("x.md", RUNBOOK)})
        assert response.status_code == 403
    client.force_login(member)
    assert len(client.get("/api/knowledge/").json()["results"]) == len(list(VAULT.glob("*.md")))
    client.force_login(outsider)
    assert client.get("/api/knowledge/").json()["results"] == []
    client.logout()
    assert client.post("/api/knowledge/", {"file": SimpleUploadedFile("x.md", RUNBOOK)}).status_code in (
        401,
        403,
    )


@pytest.mark.django_db(transaction=True)
def test_admin_upload_creates_an_indexed_document(client, org_admin, celery_worker_if_redis):
    client.force_login(org_admin)
    upload = SimpleUploadedFile("dns.md", b"# DNS outage\n\n## Symptoms\n\nSERVFAIL from the resolvers.\n")
    response = client.post(
        "/admin/ops_app/knowledgedocument/add/", {"title": "", "source": "", "content": "", "upload": upload}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    document = KnowledgeDocument.objects.get(source="dns.md")
    assert document.title == "DNS outage" and document.organization_id == org_admin.membership.organization_id
    wait_indexed(document.pk)
    assert knowledge.search(document.organization_id, "SERVFAIL resolvers")[0].document_id == document.pk
    listing = client.get("/admin/ops_app/knowledgedocument/")
    assert listing.status_code == 200 and b"DNS outage" in listing.content


@pytest.mark.django_db
def test_bootstrap_loads_the_builtin_vault_for_the_demo_organization(settings, tmp_path):
    import dataclasses
    from io import StringIO

    from django.core.management import call_command

    from ops_app.models import Organization

    settings.CONFIG = dataclasses.replace(settings.CONFIG, data_dir=tmp_path, vault_dir=VAULT)
    out = StringIO()
    call_command("ongrid_bootstrap", stdout=out)
    call_command("ongrid_bootstrap", stdout=out)
    demo = Organization.objects.get(name="Demo Shop")
    assert KnowledgeDocument.objects.for_organization(demo).count() == len(list(VAULT.glob("*.md")))
    assert f"{len(list(VAULT.glob('*.md')))} unchanged" in out.getvalue()  # the second run changed nothing
    assert knowledge.search(demo.id, "OOM killer")[0].source == "oom.md"


def test_vault_dir_comes_from_the_environment(tmp_path):
    from ongrid_site import config

    assert config.load({"SECRET_KEY": "x"}).vault_dir == VAULT.resolve()
    assert config.load({"SECRET_KEY": "x", "ONGRID_VAULT_DIR": str(tmp_path)}).vault_dir == tmp_path.resolve()
