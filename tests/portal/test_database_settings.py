"""Database connections per process kind: the ASGI web process takes PostgreSQL connections
from a pool (a thread per request would otherwise keep one each), the others keep theirs."""

from __future__ import annotations

import json

import pytest

from tests.portal.test_datadir import python

SHOW = (
    "import json; from django.conf import settings; d = settings.DATABASES['default']; "
    "print(json.dumps({'age': d['CONN_MAX_AGE'], 'pool': d.get('OPTIONS', {}).get('pool')}))"
)
POSTGRES = "postgres://postgres@127.0.0.1:5432/test"


@pytest.mark.processes
def test_the_asgi_web_process_pools_postgresql_connections(tmp_path):
    shown = json.loads(
        python(
            SHOW, tmp_path, DATABASE_URL=POSTGRES, KRUNTIMES_ASGI="1", KRUNTIMES_DB_POOL_SIZE="7"
        ).stdout
    )
    assert shown == {"age": 0, "pool": {"min_size": 1, "max_size": 7, "timeout": 30}}


@pytest.mark.processes
def test_workers_keep_their_connections_and_sqlite_is_never_pooled(tmp_path):
    worker = json.loads(python(SHOW, tmp_path, DATABASE_URL=POSTGRES).stdout)
    assert worker == {"age": 300, "pool": None}
    sqlite = json.loads(python(SHOW, tmp_path, KRUNTIMES_ASGI="1").stdout)
    assert sqlite["pool"] is None


@pytest.mark.processes
def test_the_asgi_entry_point_is_such_a_process(tmp_path):
    shown = json.loads(
        python("import portal.asgi; " + SHOW, tmp_path, DATABASE_URL=POSTGRES).stdout
    )
    assert shown["age"] == 0 and shown["pool"]["max_size"] == 10
