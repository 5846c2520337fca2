"""Run.expires_at (finished_at + ttl_after_finished) and the TTL pass's partial index."""

from django.db import migrations, models


def backfill(apps, schema_editor):
    Run = apps.get_model("scheduling", "Run")
    Run.objects.filter(finished_at__isnull=False, ttl_after_finished__isnull=False).update(
        expires_at=models.ExpressionWrapper(
            models.F("finished_at") + models.F("ttl_after_finished"),
            output_field=models.DateTimeField(),
        )
    )


class Migration(migrations.Migration):
    dependencies = [
        ("scheduling", "0005_run_workspace"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="expires_at",
            field=models.DateTimeField(blank=True, editable=False, null=True),
        ),
        migrations.RunPython(backfill, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="run",
            index=models.Index(
                condition=models.Q(
                    ("deletion_timestamp__isnull", True), ("expires_at__isnull", False)
                ),
                fields=["expires_at"],
                name="run_ttl_due",
            ),
        ),
    ]
