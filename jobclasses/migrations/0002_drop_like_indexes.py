"""The _like twin indexes of this app's text columns go (see portal.db.postgresql)."""

from django.db import migrations

from portal.db.like_indexes import drop_like_indexes


class Migration(migrations.Migration):
    dependencies = [("jobclasses", "0001_initial")]

    operations = [drop_like_indexes("jobclasses")]
