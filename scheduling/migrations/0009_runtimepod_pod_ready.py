from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('scheduling', '0008_run_newest_first'),
    ]

    operations = [
        migrations.AddField(
            model_name='runtimepod',
            name='pod_ready',
            field=models.BooleanField(default=True),
        ),
    ]
