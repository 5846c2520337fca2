"""Events are written once per bound Run: the table keeps only the indexes its reads use."""

from __future__ import annotations

import pytest
from django.db import connection

from portal.models import Event

pytestmark = pytest.mark.django_db


def test_the_event_table_has_only_the_indexes_its_reads_use():
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, Event._meta.db_table)
    indexed = {
        tuple(info["columns"])
        for info in constraints.values()
        if (info["index"] or info["unique"] or info["primary_key"]) and info["columns"]
    }
    assert indexed == {
        ("id",),
        ("uid",),  # the object's identity
        ("namespace", "name"),  # unique: a GET, a namespace's list and its deletion
        ("deletion_timestamp",),  # the garbage collector's finalizer pass
        ("involved_uid",),  # an object's Events (its admin page, describe)
        ("last_seen",),  # expiry, and the admin's newest-first order
        ("namespace", "involved_kind", "involved_name"),  # fieldSelector involvedObject.*
    }
