from django.db import migrations


def create_default_namespace(apps, schema_editor):
    Namespace = apps.get_model("portal", "Namespace")
    Namespace.objects.get_or_create(
        name="default",
        defaults={"spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}},
    )


class Migration(migrations.Migration):
    dependencies = [("portal", "0001_initial")]

    operations = [migrations.RunPython(create_default_namespace, migrations.RunPython.noop)]
