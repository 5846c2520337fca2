"""LeastLoaded: prefer the pod with the larger share of ``runs`` capacity left after placing."""

from __future__ import annotations

from ..framework import Plugin


class LeastLoaded(Plugin):
    name = "LeastLoaded"
    scores = True

    def score(self, run, pod, snapshot, state):
        capacity = pod.capacity.get("runs", 0)
        if capacity <= 0:
            return 0.0
        left = capacity - pod.used.get("runs", 0) - run.requests.get("runs", 0)
        return max(0.0, 100.0 * left / capacity)
