"""How long semantic search's exact scan takes (docs/knowledge.md, "What is stored, and the exact
scan"): `vectors.nearest` over N passages of one organization at a few embedding dimensions, on a
throw-away SQLite database (or BENCH_PG's PostgreSQL database, which is created if missing).

    .venv/bin/python bench/knowledge_scan.py [--passages 5000,20000] [--dimensions 256,768,1536]

Prints the median of 3 questions per row. No model server is involved: the vectors are random
unit vectors, which is what the scan costs whatever the model.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def setup_django(database_url: str | None) -> None:
    data = tempfile.mkdtemp(prefix="ongrid-bench-knowledge-")
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ["ONGRID_DATA_DIR"] = data
    os.environ.pop("REDIS_URL", None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    else:
        os.environ.pop("DATABASE_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ongrid_site.settings")
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def unit(dimension: int, rng: random.Random):
    from ops_app.knowledge.embeddings import normalised

    return normalised([rng.gauss(0, 1) for _ in range(dimension)])


def fill(organization, passages: int, dimension: int, model: str) -> None:
    from ops_app.knowledge.embeddings import to_bytes
    from ops_app.models import KnowledgeDocument, KnowledgePassage

    rng = random.Random(dimension * 7 + passages)
    KnowledgeDocument.objects.filter(organization=organization).delete()
    per_document = 10
    for start in range(0, passages, 1000):
        documents = KnowledgeDocument.objects.bulk_create(
            KnowledgeDocument(organization=organization, title=f"doc {n}", source=f"bench/{n}.md",
                              content="x", content_hash=str(n))
            for n in range(start // per_document, (start + 1000) // per_document)
        )  # fmt: skip
        KnowledgePassage.objects.bulk_create(
            KnowledgePassage(
                organization=organization, document=document, position=p, text="x", search_text="x",
                embedding=to_bytes(unit(dimension, rng)), embedding_model=model,
            )
            for document in documents
            for p in range(per_document)
        )  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--passages", default="5000,20000")
    parser.add_argument("--dimensions", default="256,768,1536")
    args = parser.parse_args()
    setup_django(os.environ.get("BENCH_PG"))
    from django.db import connection

    from ops_app.knowledge import vectors
    from ops_app.models import Organization

    organization, _ = Organization.objects.get_or_create(slug="bench-knowledge", defaults={"name": "Bench"})
    print(f"engine: {connection.vendor}; load average: {os.getloadavg()[0]:.2f}")
    print(f"{'passages':>9} {'dimension':>9} {'median s':>9} {'capped':>7}")
    for passages in (int(n) for n in args.passages.split(",")):
        for dimension in (int(d) for d in args.dimensions.split(",")):
            fill(organization, passages, dimension, "bench-model")
            rng = random.Random(1)
            times, capped = [], False
            for _ in range(3):
                question = unit(dimension, rng)
                began = time.perf_counter()
                found = vectors.nearest(organization.pk, question, 30, "bench-model")
                times.append(time.perf_counter() - began)
                capped = found.capped
            print(f"{passages:>9} {dimension:>9} {statistics.median(times):>9.2f} {capped!s:>7}")


if __name__ == "__main__":
    main()
