"""The pods of one (namespace, runtime), kept ordered by free capacity: least loaded first.

Filter walks candidates in this order and stops once it has enough feasible pods, so pods
that are full (or not ready) are visited only when the pods before them are not enough, and
the sample Score looks at holds the least loaded pods. A pod's place is updated in O(log n)
search plus one list move whenever its usage or readiness changes (Assume, release, resync).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter

from .pod_state import PodState

Key = tuple[int, float, str]


def load(pod: PodState) -> float:
    """The pod's highest used/capacity ratio over the resources it advertises."""
    highest = 0.0
    for name, total in pod.capacity.items():
        used = pod.used.get(name, 0)
        if total > 0:
            ratio = used / total
            if ratio > highest:
                highest = ratio
        elif used > 0:
            return float("inf")
    return highest


def order_key(pod: PodState) -> Key:
    # not ready (or excluded) last; then least loaded; ties by name
    return (0 if pod.ready else 1, load(pod), pod.name)


class PodOrder:
    def __init__(self, pods: list[PodState]) -> None:
        self._keys: dict[str, Key] = {pod.name: order_key(pod) for pod in pods}
        ordered = sorted(pods, key=lambda pod: self._keys[pod.name])
        self.keys: list[Key] = [self._keys[pod.name] for pod in ordered]
        self.pods: list[PodState] = ordered
        # how many pods advertise each capacity (see shared_capacity)
        self._capacities: Counter[Capacity] = Counter(_capacity(pod) for pod in pods)

    def __len__(self) -> int:
        return len(self.pods)

    @property
    def shared_capacity(self) -> dict[str, int] | None:
        """The capacity all the pods advertise, every resource above zero (so their order by
        load is by used/capacity of each); None when they differ."""
        if len(self._capacities) != 1:
            return None
        (capacity,) = self._capacities
        if min((amount for _, amount in capacity), default=0) <= 0:
            return None
        return dict(capacity)

    def named(self, names: set[str]) -> list[PodState]:
        """The pods of ``names`` here, in this order."""
        keys = sorted(key for name in names if (key := self._keys.get(name)) is not None)
        return [self.pods[bisect_left(self.keys, key)] for key in keys]

    def update(self, pod: PodState) -> None:
        """Move ``pod`` to where its current usage and readiness put it."""
        old = self._keys.get(pod.name)
        new = order_key(pod)
        if old == new:
            return
        if old is not None:
            self._take(old)
        self._put(pod, new)

    def add(self, pod: PodState) -> None:
        self._capacities[_capacity(pod)] += 1
        self._put(pod, order_key(pod))

    def remove(self, pod: PodState) -> None:
        """Take ``pod`` out (its capacity as it was added)."""
        old = _capacity(pod)
        self._capacities[old] -= 1
        if not self._capacities[old]:
            del self._capacities[old]
        self._take(self._keys.pop(pod.name))

    def _take(self, key: Key) -> None:
        index = bisect_left(self.keys, key)
        del self.keys[index]
        del self.pods[index]

    def _put(self, pod: PodState, key: Key) -> None:
        index = bisect_left(self.keys, key)
        self.keys.insert(index, key)
        self.pods.insert(index, pod)
        self._keys[pod.name] = key


Capacity = tuple[tuple[str, int], ...]


def _capacity(pod: PodState) -> Capacity:
    return tuple(sorted(pod.capacity.items()))


__all__ = ["PodOrder", "load", "order_key"]
