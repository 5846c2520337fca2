"""Secret values out of the watch history written before it kept objects as a watch shows
them: each Secret event loses its ``data`` (no watch ever served it)."""

from django.db import migrations

BATCH = 500


def scrub(apps, schema_editor):
    WatchEvent = apps.get_model("portal", "WatchEvent")  # noqa: N806 - Django's idiom
    rows = WatchEvent.objects.filter(kind_key="secrets").only("pk", "object")
    changed = []
    for row in rows.iterator(chunk_size=BATCH):
        if isinstance(row.object, dict) and "data" in row.object:
            row.object = {key: value for key, value in row.object.items() if key != "data"}
            changed.append(row)
        if len(changed) >= BATCH:
            WatchEvent.objects.bulk_update(changed, ["object"])
            changed = []
    if changed:
        WatchEvent.objects.bulk_update(changed, ["object"])


class Migration(migrations.Migration):
    dependencies = [("portal", "0008_work_queue")]

    operations = [migrations.RunPython(scrub, migrations.RunPython.noop)]
