from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('scheduling', '0005_run_workspace'),
    ]

    operations = [
        migrations.AddField(
            model_name='runtimepod',
            name='pod_ready',
            field=models.BooleanField(default=True),
        ),
    ]
