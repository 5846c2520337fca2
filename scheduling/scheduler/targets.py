"""Affinity targets of one namespace: pod name -> how many placed Runs match a selector.

An inverted label index keeps this cheap. A new selector counts only the placed Runs carrying
one of its ``key in values`` labels (Equals/In, the most selective one); a Run assumed or
released updates only the selectors anchored on one of its labels, plus those with no anchor.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field

from portal.machinery.labels import EQUALS, IN, Requirement, Selector

Label = tuple[str, str]


@dataclass(frozen=True)
class PlacedRun:
    """An actual (bound, active) or assumed Run; ``count`` identical ones when read grouped."""

    uid: str
    labels: dict[str, str] = field(hash=False, compare=False)
    pod_name: str = ""
    assumed: bool = False
    count: int = 1


def _anchor(selector: Selector, by_label: dict[Label, list[PlacedRun]]) -> Requirement | None:
    """The Equals/In requirement whose labels the fewest placed Runs carry (None: no such)."""
    return min(
        (r for r in selector.requirements if r.operator in (EQUALS, IN)),
        key=lambda r: sum(len(by_label.get((r.key, v), ())) for v in r.values),
        default=None,
    )


class Targets:
    """One namespace's placed Runs, their label index, and the counters of asked selectors."""

    def __init__(self, placed: list[PlacedRun]) -> None:
        self.placed = list(placed)
        self._by_label: dict[Label, list[PlacedRun]] | None = None  # built on first count
        self._counters: dict[Selector, Counter[str]] = {}  # pod name -> matching Runs
        self._watchers: dict[Label | None, list[Selector]] = {}  # None: selectors with no anchor

    def counter(self, selector: Selector) -> Counter[str] | None:
        return self._counters.get(selector)

    def count(self, selector: Selector, skip: Collection[str] = ()) -> Counter[str]:
        """Count the placed Runs in memory (except the uids in ``skip``)."""
        found: Counter[str] = Counter()
        for placed in self._pool(selector):
            if placed.uid not in skip and selector.matches(placed.labels):
                found[placed.pod_name] += placed.count
        return found

    def _pool(self, selector: Selector) -> list[PlacedRun]:
        """The placed Runs that can match: those carrying one of the anchor's labels."""
        if self._by_label is None:
            self._by_label = {}
            for placed in self.placed:
                for label in placed.labels.items():
                    self._by_label.setdefault(label, []).append(placed)
        anchor = _anchor(selector, self._by_label)
        if anchor is None:
            return self.placed
        return [
            placed
            for value in anchor.values
            for placed in self._by_label.get((anchor.key, value), ())
        ]

    def watch(self, selector: Selector, counter: Counter[str]) -> None:
        """From now on keep ``counter`` (the selector's targets) current as Runs come and go."""
        self._counters[selector] = counter
        anchor = _anchor(selector, self._by_label or {})
        labels: list[Label | None] = (
            [None] if anchor is None else [(anchor.key, value) for value in anchor.values]
        )
        for label in labels:
            self._watchers.setdefault(label, []).append(selector)

    def replace(self, placed: list[PlacedRun]) -> None:
        """New placed Runs (counters stay: they are already current)."""
        self.placed = placed
        self._by_label = None

    def add(self, placed: PlacedRun) -> None:
        self.placed.append(placed)
        if self._by_label is not None:
            for label in placed.labels.items():
                self._by_label.setdefault(label, []).append(placed)
        self._update(placed.labels, placed.pod_name, placed.count)

    def remove(self, uid: str, labels: dict[str, str], pod_name: str) -> None:
        self.placed = [placed for placed in self.placed if placed.uid != uid]
        if self._by_label is not None:
            for label in labels.items():
                self._by_label[label] = [p for p in self._by_label.get(label, ()) if p.uid != uid]
        self._update(labels, pod_name, -1)

    def _update(self, labels: dict[str, str], pod_name: str, delta: int) -> None:
        # A selector watches one key, and a Run has one value per key: no selector twice.
        watchers = [
            *self._watchers.get(None, ()),
            *(s for label in labels.items() for s in self._watchers.get(label, ())),
        ]
        for selector in watchers:
            if selector.matches(labels):
                counts = self._counters[selector]
                counts[pod_name] += delta
                if counts[pod_name] <= 0:
                    del counts[pod_name]
