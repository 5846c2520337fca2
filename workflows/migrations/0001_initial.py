import django.utils.timezone
import uuid
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
    ]

    operations = [
        migrations.CreateModel(
            name='Action',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(db_index=True, max_length=253)),
                ('uid', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                ('generation', models.BigIntegerField(default=1, editable=False)),
                ('resource_version', models.BigIntegerField(default=1, editable=False)),
                ('labels', models.JSONField(blank=True, default=dict)),
                ('annotations', models.JSONField(blank=True, default=dict)),
                ('finalizers', models.JSONField(blank=True, default=list)),
                ('owner_references', models.JSONField(blank=True, default=list)),
                ('creation_timestamp', models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False)),
                ('deletion_timestamp', models.DateTimeField(blank=True, db_index=True, editable=False, null=True)),
                ('namespace', models.CharField(db_index=True, max_length=63)),
                ('spec', models.JSONField(default=dict)),
                ('status', models.JSONField(blank=True, default=dict)),
            ],
            options={
                'ordering': ('namespace', 'name'),
                'abstract': False,
                'constraints': [models.UniqueConstraint(fields=('namespace', 'name'), name='action_unique_name')],
            },
        ),
        migrations.CreateModel(
            name='Workflow',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(db_index=True, max_length=253)),
                ('uid', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                ('generation', models.BigIntegerField(default=1, editable=False)),
                ('resource_version', models.BigIntegerField(default=1, editable=False)),
                ('labels', models.JSONField(blank=True, default=dict)),
                ('annotations', models.JSONField(blank=True, default=dict)),
                ('finalizers', models.JSONField(blank=True, default=list)),
                ('owner_references', models.JSONField(blank=True, default=list)),
                ('creation_timestamp', models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False)),
                ('deletion_timestamp', models.DateTimeField(blank=True, db_index=True, editable=False, null=True)),
                ('namespace', models.CharField(db_index=True, max_length=63)),
                ('spec', models.JSONField(default=dict)),
                ('status', models.JSONField(blank=True, default=dict)),
            ],
            options={
                'ordering': ('namespace', 'name'),
                'abstract': False,
                'constraints': [models.UniqueConstraint(fields=('namespace', 'name'), name='workflow_unique_name')],
            },
        ),
        migrations.CreateModel(
            name='WorkflowRun',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('name', models.CharField(db_index=True, max_length=253)),
                ('uid', models.UUIDField(default=uuid.uuid4, editable=False, unique=True)),
                ('generation', models.BigIntegerField(default=1, editable=False)),
                ('resource_version', models.BigIntegerField(default=1, editable=False)),
                ('labels', models.JSONField(blank=True, default=dict)),
                ('annotations', models.JSONField(blank=True, default=dict)),
                ('finalizers', models.JSONField(blank=True, default=list)),
                ('owner_references', models.JSONField(blank=True, default=list)),
                ('creation_timestamp', models.DateTimeField(db_index=True, default=django.utils.timezone.now, editable=False)),
                ('deletion_timestamp', models.DateTimeField(blank=True, db_index=True, editable=False, null=True)),
                ('namespace', models.CharField(db_index=True, max_length=63)),
                ('spec', models.JSONField(default=dict)),
                ('status', models.JSONField(blank=True, default=dict)),
                ('phase', models.CharField(choices=[('Pending', 'Pending'), ('Running', 'Running'), ('Succeeded', 'Succeeded'), ('Failed', 'Failed'), ('Cancelled', 'Cancelled')], db_index=True, default='Pending', editable=False, max_length=16)),
                ('workflow', models.CharField(blank=True, db_index=True, default='', editable=False, max_length=253)),
                ('cancel_requested', models.BooleanField(default=False, editable=False)),
            ],
            options={
                'ordering': ('namespace', 'name'),
                'abstract': False,
                'constraints': [models.UniqueConstraint(fields=('namespace', 'name'), name='workflowrun_unique_name')],
            },
        ),
    ]
