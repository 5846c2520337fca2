"""Every Kubernetes call of the provider has a request timeout: an API server that accepts the
connection and never answers costs a bounded wait, never a hung provider."""

from __future__ import annotations

import socket
import time

import pytest
import urllib3

from portal import kube
from scheduling.providers.kubernetes import KubernetesProvider
from tests.helpers.records import make_runtime

pytestmark = pytest.mark.django_db


@pytest.fixture
def silent_server():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)  # connections queue up; nothing is ever read or answered
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


@pytest.mark.parametrize("call", ["ensure_deployments", "relist", "watch"])
def test_a_silent_api_server_times_out_every_call(silent_server, call):
    make_runtime()
    provider = KubernetesProvider(
        kube.api_client(host=silent_server), request_timeout=0.2, watch_seconds=1
    )
    provider.resource_version = "1"  # watch straight away, without a list first
    started = time.monotonic()
    with pytest.raises(urllib3.exceptions.HTTPError):
        getattr(provider, call)() if call != "watch" else _watch_raising(provider)
    # the client retries a timed-out call 3 times (urllib3's default): 4 waits at most
    assert time.monotonic() - started < 8  # (and the first call imports the client models)


def _watch_raising(provider: KubernetesProvider) -> None:
    """A watch's timeout ends that watch quietly (it resumes next time); say so by raising."""
    before = provider.resource_version
    provider.watch(0.3)
    assert provider.resource_version == before
    raise urllib3.exceptions.ReadTimeoutError(None, "", "the watch ended at its timeout")
