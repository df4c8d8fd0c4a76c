"""One Celery worker process of the scale-out shape for the peer comparison: the product's worker
(`agents_app.run_turn` handing turns to this process's turn host), with the benchmark's no-op tool.

    REDIS_URL=… DATABASE_URL=… OPENAI_BASE_URL=… .venv/bin/python bench/celery_worker.py NAME
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import ongrid_side  # noqa: E402,F401 - sets the benchmark's environment defaults

if __name__ == "__main__":
    import django

    django.setup()
    ongrid_side.use_bench_tools()
    from celery.signals import worker_ready

    from ongrid_site.celery import app

    worker_ready.connect(lambda **kwargs: print("bench worker ready", flush=True), weak=False)

    name = sys.argv[1] if len(sys.argv) > 1 else f"bench-{os.getpid()}"
    app.worker_main(["worker", "--pool=solo", "--loglevel=WARNING", "--without-gossip", "--without-mingle",
                     "--without-heartbeat", "-n", f"{name}@%h"])  # fmt: skip
