"""Run-to-Run affinity over the ``kruntimes.io/runtime-pod`` topology (pod name equality).

Targets are actual (bound, active) and assumed (reserved this pass) Runs in the namespace.
Bootstrap: a required runAffinity term with no target anywhere lets the Run seed the cohort
only if the Run's own labels match the term; otherwise it waits (so two Runs that each
require only the other stay Pending).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, TypedDict

from portal.machinery.labels import Selector, compile_selector

from ..framework import MAX_SCORE, Plugin, State, Verdict
from ..snapshot import PendingRun, PodState, Snapshot

WAITING_FOR_TARGET = "NoAffinityTarget"
NOT_WITH_TARGET = "AffinityMismatch"
VIOLATES_ANTI = "AntiAffinityViolation"
REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"


class Terms(TypedDict):
    """One of runAffinity/runAntiAffinity, compiled: required selectors, (weight, selector)."""

    required: list[Selector]
    preferred: list[tuple[int, Selector]]


@lru_cache(maxsize=4096)
def _compiled(selector_json: str) -> Selector:
    return compile_selector(json.loads(selector_json))


def selector_of(term: Mapping[str, Any]) -> Selector:
    return _compiled(json.dumps(term.get("labelSelector"), sort_keys=True))


def compile_affinity(affinity: Mapping[str, Any] | None) -> dict[str, Terms]:
    """PreFilter: every term's selector compiled once per Run (and cached across Runs);
    ``runAffinity``/``runAntiAffinity`` -> its terms."""
    rules: dict[str, Terms] = {}
    for kind in ("runAffinity", "runAntiAffinity"):
        spec = (affinity or {}).get(kind) or {}
        rules[kind] = {
            "required": [selector_of(t) for t in spec.get(REQUIRED) or []],
            "preferred": [
                (int(t.get("weight", 0)), selector_of(t.get("runAffinityTerm") or {}))
                for t in spec.get(PREFERRED) or []
            ],
        }
    return rules


def preferred_weights(
    run: PendingRun, snapshot: Snapshot, state: State
) -> tuple[Counter[str], int]:
    """(pod name -> summed signed weight of the preferred terms it has a target for, the sum
    of the preferred anti-affinity weights); resolved once per Run. An empty counter: no pod
    is preferred or avoided, so every pod scores the same."""
    resolved: tuple[Counter[str], int] | None = state.get("preferred")
    if resolved is None:
        rules = state.get("affinity") or compile_affinity(run.affinity)
        weights: Counter[str] = Counter()
        for sign, kind in ((1, "runAffinity"), (-1, "runAntiAffinity")):
            for weight, selector in rules[kind]["preferred"]:
                for pod_name, count in snapshot.targets(run.namespace, selector).items():
                    if count > 0:
                        weights[pod_name] += sign * weight
        anti = sum(weight for weight, _ in rules["runAntiAffinity"]["preferred"])
        resolved = state["preferred"] = (weights, anti)
    return resolved


class RunAffinity(Plugin):
    name = "RunAffinity"

    def pre_filter(self, run: PendingRun, snapshot: Snapshot, state: State) -> Verdict | None:
        rules = state["affinity"] = compile_affinity(run.affinity)
        # each term's targets once per Run, not once per pod (no Run is assumed meanwhile)
        state["required"] = [
            (selector.matches(run.labels), snapshot.targets(run.namespace, selector))
            for selector in rules["runAffinity"]["required"]
        ]
        state["anti"] = [
            snapshot.targets(run.namespace, selector)
            for selector in rules["runAntiAffinity"]["required"]
        ]
        return None

    def filters(self, run: PendingRun, state: State) -> bool:
        return bool(state["required"] or state["anti"])  # the Run has a required term

    def pre_filter_pods(self, run: PendingRun, snapshot: Snapshot, state: State) -> set[str] | None:
        """The pods with a target of every required term that has targets (a term with none
        lets no pod pass, unless the Run seeds it)."""
        allowed: set[str] | None = None
        for seeds_itself, targets in state["required"]:
            if not targets:
                if seeds_itself:
                    continue
                return set()
            names = {name for name, count in targets.items() if count > 0}
            allowed = names if allowed is None else allowed & names
        return allowed

    def filter(
        self, run: PendingRun, pod: PodState, snapshot: Snapshot, state: State
    ) -> str | None:
        for seeds_itself, targets in state["required"]:
            if not targets:
                if not seeds_itself:
                    return WAITING_FOR_TARGET
                continue  # bootstrap: this Run seeds the cohort
            if targets.get(pod.name, 0) == 0:
                return NOT_WITH_TARGET
        for targets in state["anti"]:
            if targets.get(pod.name, 0) > 0:
                return VIOLATES_ANTI
        return None


class PreferredRunAffinity(Plugin):
    name = "PreferredRunAffinity"
    scores = True

    def pre_score(self, run: PendingRun, snapshot: Snapshot, state: State) -> bool:
        return bool(preferred_weights(run, snapshot, state)[0])

    def score(self, run: PendingRun, pod: PodState, snapshot: Snapshot, state: State) -> int:
        """The weights of the preferred runAffinity terms the pod has a target for, plus those
        of the preferred runAntiAffinity terms it has none for (never negative)."""
        weights, anti = preferred_weights(run, snapshot, state)
        return anti + weights.get(pod.name, 0)

    def normalize(self, scores: dict[str, int]) -> dict[str, int]:
        """Scale by the highest score to 0..100 (all 0 when no pod scores)."""
        high = max(scores.values())
        if high <= 0:
            return dict.fromkeys(scores, 0)
        return {name: value * MAX_SCORE // high for name, value in scores.items()}
