"""A failed run of an approved change is no longer stamped `executed_at` (docs/review-gate.md):
existing rows whose run did not succeed move that time to `failed_at`, with the error their call's
audit row recorded (already redacted there), cut to the length new rows keep."""

from django.db import migrations, models

ERROR_CHARS = 2000  # agents_app.gate.proposals.ERROR_CHARS when this was written


def split_failed_runs(apps, schema_editor):
    proposals = apps.get_model("agents_app", "MutatingProposal")
    audit_rows = apps.get_model("audit_app", "AuditLog")
    failed = proposals.objects.filter(executed_at__isnull=False).exclude(execution_status__in=["", "ok"])
    for proposal in failed.iterator():
        row = (
            audit_rows.objects.filter(session_id=proposal.session_id, tool_call_id=proposal.tool_call_id)
            .exclude(tool_call_id="")
            .order_by("-started_at")
            .first()
        )
        error = (row.error or row.result) if row is not None else ""
        proposal.failed_at, proposal.executed_at = proposal.executed_at, None
        proposal.execution_error = (error or proposal.execution_status)[:ERROR_CHARS]
        proposal.save(update_fields=["failed_at", "executed_at", "execution_error"])


def merge_failed_runs(apps, schema_editor):
    proposals = apps.get_model("agents_app", "MutatingProposal")
    for proposal in proposals.objects.filter(failed_at__isnull=False).iterator():
        proposal.executed_at, proposal.failed_at = proposal.failed_at, None
        proposal.save(update_fields=["executed_at", "failed_at"])


class Migration(migrations.Migration):
    dependencies = [
        ("agents_app", "0004_verbose_names"),
        ("audit_app", "0005_verbose_names"),
    ]

    operations = [
        migrations.AddField(
            model_name="mutatingproposal",
            name="failed_at",
            field=models.DateTimeField(blank=True, null=True, verbose_name="failed at"),
        ),
        migrations.AddField(
            model_name="mutatingproposal",
            name="execution_error",
            field=models.TextField(blank=True, verbose_name="execution error"),
        ),
        migrations.RunPython(split_failed_runs, merge_failed_runs),
    ]
