"""The pods of one (namespace, runtime), kept ordered by free capacity: least loaded first.

Filter walks candidates in this order and stops once it has enough feasible pods, so pods
that are full (or not ready) are visited only when the pods before them are not enough, and
the sample Score looks at holds the least loaded pods. A pod's place is updated in O(log n)
search plus one list move whenever its usage or readiness changes (Assume, release, resync).
"""

from __future__ import annotations

from bisect import bisect_left
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .snapshot import PodState

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
        # the capacity all the pods advertise, every resource above zero (so their order by
        # load is by used/capacity of each); None when they differ
        shared = pods[0].capacity if pods else None
        if shared is not None and (
            min(shared.values(), default=0) <= 0 or any(pod.capacity != shared for pod in pods)
        ):
            shared = None
        self.shared_capacity: dict[str, int] | None = shared

    def __len__(self) -> int:
        return len(self.pods)

    def update(self, pod: PodState) -> None:
        """Move ``pod`` to where its current usage and readiness put it."""
        old = self._keys.get(pod.name)
        new = order_key(pod)
        if old == new:
            return
        if old is not None:
            index = bisect_left(self.keys, old)
            del self.keys[index]
            del self.pods[index]
        index = bisect_left(self.keys, new)
        self.keys.insert(index, new)
        self.pods.insert(index, pod)
        self._keys[pod.name] = new


__all__ = ["PodOrder", "load", "order_key"]
