"""LeastLoaded: prefer the pod that is least loaded after placing the Run.

A pod's load is its highest projected ratio ``(used + requested) / capacity`` over the
resources the Run requests, ties broken by the sum of those ratios (exact fractions, so equal
loads tie exactly). Normalisation ranks the feasible pods: the least loaded group scores 100,
the most loaded 0, equal loads share a score, so LeastLoaded weighs as much as any other
Score plugin.
"""

from __future__ import annotations

from fractions import Fraction

from ..framework import MAX_SCORE, Plugin, State, lowest_raw_wins
from ..snapshot import PendingRun, PodState, Snapshot

Load = tuple[float, float] | tuple[Fraction, Fraction]


def projected_load(
    requests: dict[str, int], used: dict[str, int], capacity: dict[str, int]
) -> Load:
    """(highest ratio, sum of ratios) of ``used + requests`` over ``capacity``.

    One requested resource (most Runs ask only for ``runs``) is a single division: a float
    is exact enough, since equal ratios round to the same float. Several are summed as exact
    fractions, so equal sums tie exactly. Every feasible pod of a Run has the same requested
    resources, so the loads the Run's pods are ranked by are all of one kind."""
    if len(requests) == 1:  # the hot path: one division per pod
        ((name, amount),) = requests.items()
        total = capacity.get(name, 0)
        ratio = (used.get(name, 0) + amount) / total if amount > 0 and total > 0 else 0.0
        return ratio, ratio
    ratios = [
        (used.get(name, 0) + amount, capacity[name])
        for name, amount in requests.items()
        if amount > 0 and capacity.get(name, 0) > 0
    ]
    if len(ratios) == 1:
        ratio = ratios[0][0] / ratios[0][1]
        return ratio, ratio
    exact = [Fraction(numerator, denominator) for numerator, denominator in ratios]
    return max(exact, default=Fraction(0)), sum(exact, Fraction(0))


def rank_scores(loads: dict[str, Load]) -> dict[str, int]:
    """Least loaded -> 100, most loaded -> 0, linear in rank; equal loads share a rank."""
    ranked = sorted(loads, key=loads.__getitem__)
    if len(ranked) == 1:
        return {ranked[0]: MAX_SCORE}
    scores: dict[str, int] = {}
    start = 0
    for index, name in enumerate(ranked):
        if loads[name] != loads[ranked[start]]:
            start = index
        scores[name] = (len(ranked) - 1 - start) * MAX_SCORE // (len(ranked) - 1)
    return scores


class LeastLoaded(Plugin):
    name = "LeastLoaded"
    scores = True

    def score(self, run: PendingRun, pod: PodState, snapshot: Snapshot, state: State) -> Load:
        return projected_load(run.requests, pod.used, pod.capacity)

    def walks_best_first(self, run: PendingRun, snapshot: Snapshot) -> bool:
        """Candidates are walked least loaded first (``pod_order``: by used/capacity, ties to
        the name). When every candidate advertises just the one resource the Run requests,
        with the same capacity, that order is this plugin's: (used + request) / capacity
        grows with used/capacity."""
        if len(run.requests) != 1:
            return False
        ((name, amount),) = run.requests.items()
        capacity = snapshot.shared_capacity(run)
        return amount > 0 and capacity is not None and capacity.keys() == {name}

    @lowest_raw_wins  # rank_scores: only the least loaded group scores MAX_SCORE
    def normalize(self, scores: dict[str, Load]) -> dict[str, int]:
        return rank_scores(scores)
