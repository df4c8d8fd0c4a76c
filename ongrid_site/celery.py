"""The Celery app. Tasks are discovered in every installed app's `tasks.py`."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ongrid_site.settings")

app = Celery("ongrid")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The agents layer keeps its tasks with the runtime (agents_app/runtime/tasks.py).
app.autodiscover_tasks(["agents_app.runtime"])
