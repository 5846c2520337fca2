"""RuntimePod rows take the cluster's resourceVersion (``scheduling.pod_writer``) instead of
their own PodRevision counter; the rows there are get fresh versions, in primary-key order."""

from django.db import migrations, models


def version_existing_pods(apps, schema_editor):
    from portal.machinery import counter_row

    pods = apps.get_model("scheduling", "RuntimePod")
    rows = list(pods.objects.order_by("pk").only("pk"))
    if not rows:
        return
    top = counter_row.increment(apps.get_model("portal", "ResourceVersionCounter"), len(rows))
    for version, row in enumerate(rows, start=top - len(rows) + 1):
        row.resource_version = version
    pods.objects.bulk_update(rows, ["resource_version"], batch_size=500)


class Migration(migrations.Migration):

    dependencies = [
        ("portal", "0004_watch_history"),
        ("scheduling", "0015_scheduler_on_work_queue"),
    ]

    operations = [
        migrations.AddField(
            model_name="runtimepod",
            name="resource_version",
            field=models.BigIntegerField(db_index=True, default=0, editable=False),
        ),
        migrations.RunPython(version_existing_pods, migrations.RunPython.noop),
        migrations.RemoveField(model_name="runtimepod", name="revision"),
        migrations.DeleteModel(name="PodRevision"),
    ]
