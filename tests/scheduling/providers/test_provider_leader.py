"""Two cluster-provider replicas and one ``coordination.k8s.io/v1`` Lease, over HTTP through
the official client against the emulator, time injected: only the holder acts, the other
takes over once the Lease has expired, and a holder that cannot renew stops acting."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from portal import kube
from scheduling.providers.kubernetes import KubernetesProvider
from scheduling.providers.leader import LeaseLock
from tests.helpers.kube import EmulatorServer
from tests.helpers.records import make_runtime

pytestmark = pytest.mark.django_db
LEASE = ("default", "kruntimes-cluster-provider")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def cluster():
    with EmulatorServer() as server:
        yield server


@pytest.fixture
def clock():
    return Clock()


def replica(url: str, identity: str, clock: Clock) -> tuple[KubernetesProvider, LeaseLock]:
    api = kube.api_client(host=url)
    provider = KubernetesProvider(api, request_timeout=5, watch_seconds=1)
    lease = LeaseLock(
        api,
        namespace=LEASE[0],
        name=LEASE[1],
        identity=identity,
        lease_seconds=15,
        request_timeout=5,
        clock=clock,
    )
    return provider, lease


def lease_spec(cluster) -> dict:
    return cluster.store.get("coordination.k8s.io", "leases", *LEASE)["spec"]


def at(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def deployments(cluster) -> list[str]:
    return [d["metadata"]["name"] for d in cluster.store.select("apps", "deployments", "default")]


def test_only_the_holder_acts_and_records_the_lease_as_leaselock_does(cluster, clock):
    make_runtime("bash")
    a, lease_a = replica(cluster.url, "worker-a", clock)
    b, lease_b = replica(cluster.url, "worker-b", clock)
    assert a.lead(lease_a, 0.1) is True
    assert deployments(cluster) == ["runtime-bash"]
    cluster.store.delete("apps", "deployments", "default", "runtime-bash")
    clock.advance(5)
    assert b.lead(lease_b, 0.1) is False
    assert deployments(cluster) == []  # b did nothing
    spec = lease_spec(cluster)
    assert spec["holderIdentity"] == "worker-a" and spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert at(spec["acquireTime"]) == at(spec["renewTime"]) == at("2026-01-01T00:00:00Z")
    assert a.lead(lease_a, 0.1) is True  # renewed, and it acts again
    assert at(lease_spec(cluster)["renewTime"]) == at("2026-01-01T00:00:05Z")
    assert deployments(cluster) == ["runtime-bash"]


def test_the_other_replica_takes_over_once_the_lease_has_expired(cluster, clock):
    make_runtime("bash")
    a, lease_a = replica(cluster.url, "worker-a", clock)
    b, lease_b = replica(cluster.url, "worker-b", clock)
    assert a.lead(lease_a, 0.1)
    clock.advance(14)
    assert not b.lead(lease_b, 0.1)  # not yet expired
    clock.advance(2)
    assert b.lead(lease_b, 0.1)
    spec = lease_spec(cluster)
    assert spec["holderIdentity"] == "worker-b" and spec["leaseTransitions"] == 1
    assert at(spec["acquireTime"]) == at("2026-01-01T00:00:16Z")
    assert not a.lead(lease_a, 0.1)  # it sees b's Lease and stops acting
    assert not lease_a.leading and lease_b.leading


def test_a_holder_that_cannot_renew_stops_acting(cluster, clock):
    make_runtime("bash")
    a, lease_a = replica(cluster.url, "worker-a", clock)
    assert a.lead(lease_a, 0.1)
    _, unreachable = replica("http://127.0.0.1:9", "worker-a", clock)  # nothing listens
    cluster.store.delete("apps", "deployments", "default", "runtime-bash")
    assert not KubernetesProvider.lead(a, unreachable, 0.1)
    assert deployments(cluster) == []


def test_two_candidates_racing_for_a_free_lease_one_wins(cluster, clock):
    _, lease_a = replica(cluster.url, "worker-a", clock)
    _, lease_b = replica(cluster.url, "worker-b", clock)
    assert [lease_a.hold(), lease_b.hold()] == [True, False]
    lease_a.release()
    assert lease_spec(cluster)["holderIdentity"] == ""
    assert lease_b.hold()  # released: no need to wait for expiry
    assert lease_spec(cluster)["leaseTransitions"] == 0
