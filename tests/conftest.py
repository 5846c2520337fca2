"""Shared fixtures: API clients with real tokens, and the services the suite needs.

A service a test needs and cannot reach is a failure, never a skip (``tests.helpers.services``);
CI (``CI=true``) also insists on PostgreSQL.
"""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

import tests.helpers.examples  # noqa: F401  (loads the Hypothesis profile)
from tests.helpers.api import token_client
from tests.helpers.services import IN_CI


def pytest_sessionstart(session):
    from django.conf import settings

    from portal.datadir import ensure_data_dir

    ensure_data_dir()

    if IN_CI and "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        raise pytest.UsageError("CI=true needs DATABASE_URL pointing at PostgreSQL")


# Modules whose every test starts real processes (the ``processes`` marker: make test-fast
# leaves them out; make test runs everything).
PROCESS_MODULES = (
    "tests/integration/",
    "tests/runtimed/test_end_to_end.py",
)


def pytest_collection_modifyitems(config, items):
    root = str(config.rootpath) + "/"
    for item in items:
        relative = str(item.path).removeprefix(root)
        if relative.startswith(PROCESS_MODULES):
            item.add_marker(pytest.mark.processes)


@pytest.fixture(autouse=True)
def _fresh_scheduler_cache():
    """Test databases roll back between tests and resourceVersions repeat, which a running
    installation never sees: each test's worker scheduler starts with a fresh usage cache."""
    from scheduling import tasks

    tasks._framework = None
    yield


@pytest.fixture
def admin_user(django_user_model):
    return django_user_model.objects.create_superuser("admin", "admin@example.com", "pw")


@pytest.fixture
def user(django_user_model):
    return django_user_model.objects.create_user("alice", "alice@example.com", "pw")


@pytest.fixture
def admin_api(admin_user) -> APIClient:
    return token_client(admin_user)


@pytest.fixture
def user_api(user) -> APIClient:
    return token_client(user)


@pytest.fixture
def anon_api() -> APIClient:
    return APIClient()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    """Expose each phase's report on the item (``item.rep_call``) for fixtures' teardown."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def s3_endpoint():
    """One moto S3 server on a free local port, spoken to over real HTTP."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()
