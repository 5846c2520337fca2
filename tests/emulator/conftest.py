"""The emulator under test, reached only through the official client over HTTP."""

from __future__ import annotations

import kubernetes
import pytest

from portal.kube import configuration
from tests.helpers.kube import EmulatorServer


@pytest.fixture
def kube():
    with EmulatorServer() as server:
        yield server
        assert server.store.errors == []  # no controller failed behind a test's back


@pytest.fixture
def client(kube):
    with kubernetes.client.ApiClient(configuration(host=kube.url)) as api_client:
        yield api_client


@pytest.fixture
def core(client):
    return kubernetes.client.CoreV1Api(client)


@pytest.fixture
def apps(client):
    return kubernetes.client.AppsV1Api(client)


@pytest.fixture
def batch(client):
    return kubernetes.client.BatchV1Api(client)
