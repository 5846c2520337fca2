"""The scheduler framework: plugins at PreFilter, Filter, PreScore and Score, one Run at a time.

A Filter says why not (a short, bounded reason); a Score says how much. Each Score plugin's
raw scores are normalised to 0..100 across the feasible pods before they are summed, so every
plugin weighs the same; the highest total wins, ties to the smallest pod name. Plugins are pure
functions of the Run, the pod and the snapshot, so each is tested on its own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .snapshot import PendingRun, PodState, Snapshot

MAX_SCORE = 100  # a normalised score is an integer in 0..MAX_SCORE
# What the plugins keep for one Run's cycle (e.g. PreFilter's compiled terms, for Filter).
State = dict[str, Any]
# (plugin name, Filter reason) -> how many pods that rejection hit.
Rejections = Counter[tuple[str, str]]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Verdict:
    """A PreFilter outcome: ``fatal`` ends the Run Failed; otherwise it stays Pending."""

    reason: str
    message: str
    fatal: bool = False
    plugin: str = ""


class Plugin:
    name = "Plugin"

    def pre_filter(self, run: PendingRun, snapshot: Snapshot, state: State) -> Verdict | None:
        return None

    def filter(
        self, run: PendingRun, pod: PodState, snapshot: Snapshot, state: State
    ) -> str | None:
        return None

    def pre_filter_pods(self, run: PendingRun, snapshot: Snapshot, state: State) -> set[str] | None:
        """After PreFilter: the names of the only pods this plugin's Filter can pass for this
        Run, or None for any (kube-scheduler's PreFilterResult). Filter then walks just
        those; a pod left out must be one the Filter would reject."""
        return None

    def filters(self, run: PendingRun, state: State) -> bool:
        """After PreFilter: whether this plugin's Filter can reject a pod for this Run (False:
        it is skipped for every pod, as kube-scheduler skips a Filter whose PreFilter said
        Skip)."""
        return True

    def pre_score(self, run: PendingRun, snapshot: Snapshot, state: State) -> bool:
        """Whether this plugin has anything to say about the Run (False: Score is skipped)."""
        return True

    def score(self, run: PendingRun, pod: PodState, snapshot: Snapshot, state: State) -> Any:
        """A raw score of the pod: anything ``normalize`` can rank."""
        return 0

    def walks_best_first(self, run: PendingRun, snapshot: Snapshot) -> bool:
        """Whether the snapshot walks this Run's candidates by this plugin's raw score, lowest
        first, ties to the smallest name: then, when it is the only Score plugin and its
        ``normalize`` is ``lowest_raw_wins``, the first feasible pod is the one it picks and
        Filter stops there."""
        return False

    def normalize(self, scores: dict[str, Any]) -> dict[str, int]:
        """Pod name -> 0..MAX_SCORE, from the raw scores of every feasible pod (by default the
        raw scores, which must then be in range already)."""
        return scores

    scores = False  # whether this plugin takes part in Score


def lowest_raw_wins(normalize: F) -> F:
    """Marks a ``normalize`` that gives MAX_SCORE to exactly the pods of the lowest raw score:
    the pod its plugin alone picks is then that score's, ties to the smallest name, and the
    framework finds it without normalising. A subclass that overrides ``normalize`` loses
    the mark."""
    normalize.lowest_raw_wins = True  # type: ignore[attr-defined]
    return normalize


def _lowest_raw_wins(plugin: Plugin) -> bool:
    return getattr(type(plugin).normalize, "lowest_raw_wins", False) is True


@dataclass
class Decision:
    pod: PodState | None = None
    message: str = ""
    verdict: Verdict | None = None
    rejections: Rejections = field(default_factory=Counter)


# Filter reasons (fixed keys, also the metric label) and how a Pending message says them.
REASON_TEXT = {
    "NotReady": ("is not ready", "are not ready"),
    "HeartbeatStale": ("has no recent runtimed heartbeat", "have no recent runtimed heartbeat"),
    "MissingResource": ("lacks a requested resource", "lack a requested resource"),
    "AtCapacity": ("at capacity", "at capacity"),
    "ExceedsCapacity": (
        "has less capacity than the Run requests",
        "have less capacity than the Run requests",
    ),
    "NoAffinityTarget": ("waits for a runAffinity target", "wait for a runAffinity target"),
    "AffinityMismatch": ("does not match runAffinity", "do not match runAffinity"),
    "AntiAffinityViolation": ("violates runAntiAffinity", "violate runAntiAffinity"),
    "WorkspaceFenced": (
        "is not the workspace's bound pod (name and UID)",
        "are not the workspace's bound pod (name and UID)",
    ),
}


def reason_text(reason: str, count: int) -> str:
    singular, plural = REASON_TEXT.get(reason, (reason, reason))
    return singular if count == 1 else plural


def pending_message(total: int, rejections: Mapping[tuple[str, str], int]) -> str:
    """``0/3 pods: 2 at capacity, 1 violates runAntiAffinity``: bounded, names no pods/Runs."""
    if total == 0:
        return "0/0 pods: no Runtime Pods for this Runtime in this namespace"
    by_reason: Counter[str] = Counter()
    for (_, reason), count in rejections.items():
        by_reason[reason] += count
    parts = [
        f"{count} {reason_text(reason, count)}"
        for reason, count in sorted(by_reason.items(), key=lambda item: (-item[1], item[0]))
    ]
    return f"0/{total} pods: " + ", ".join(parts)


def _implements(plugin: Plugin, method: str) -> bool:
    return getattr(type(plugin), method, None) is not getattr(Plugin, method)


MIN_PODS_TO_SCORE = 50  # below this many candidates every pod is filtered and scored


def pods_to_find(total: int, percentage: int, minimum: int = MIN_PODS_TO_SCORE) -> int:
    """How many feasible pods Filter looks for before it stops (and Score then ranks):
    kube-scheduler's ``numFeasibleNodesToFind``. Every pod when there are at most ``minimum``
    or ``percentage`` is 100; ``percentage`` 0 is adaptive (50% less 1% per 125 pods, at least
    5%); never fewer than ``minimum``."""
    if total <= minimum or percentage >= 100:
        return total
    if percentage <= 0:
        percentage = max(5, 50 - total // 125)
    return max(minimum, total * percentage // 100)


class Framework:
    def __init__(
        self,
        plugins: list[Plugin],
        percentage_of_pods_to_score: int = 100,
        min_pods_to_score: int = MIN_PODS_TO_SCORE,
    ) -> None:
        """``percentage_of_pods_to_score`` bounds Filter and Score (see ``pods_to_find``);
        100, the default, looks at every pod."""
        self.plugins = plugins
        self.percentage = percentage_of_pods_to_score
        self.minimum = min_pods_to_score
        # pod usage kept across this framework's passes (see usage_cache); None: read each pass
        self.usage_cache: Any = None
        # the pods kept across passes (see pod_cache; needs the usage cache); None: read each
        self.pod_cache: Any = None
        # what this scheduler's binds left on each pod (see bind.PodLedger); None: per pass
        self.ledger: Any = None
        # Runs found unschedulable, skipped while nothing changed (see parking); None: off
        self.parking: Any = None
        # Filter runs once per (Run, pod): skip the plugins that do not implement it
        self.filters = [p for p in plugins if _implements(p, "filter")]
        self.scorers = [p for p in plugins if p.scores]

    def schedule_one(self, run: PendingRun, snapshot: Snapshot) -> Decision:
        state: State = {}
        for plugin in self.plugins:
            verdict = plugin.pre_filter(run, snapshot, state)
            if verdict is not None:
                return Decision(message=verdict.message, verdict=verdict)
        candidates = snapshot.candidates(run)
        if not candidates and not snapshot.runtime_exists(run.namespace, run.runtime):
            # accepted (it may be created later), but say what the Run waits for
            return Decision(
                message=f'Runtime "{run.runtime}" not found in namespace "{run.namespace}"'
            )
        filters = [plugin for plugin in self.filters if plugin.filters(run, state)]
        scorers = [plugin for plugin in self.scorers if plugin.pre_score(run, snapshot, state)]
        enough = pods_to_find(len(candidates), self.percentage, self.minimum)
        if (
            len(scorers) == 1
            and _lowest_raw_wins(scorers[0])
            and scorers[0].walks_best_first(run, snapshot)
        ):
            enough = 1  # the first feasible pod is the best of any sample
        walk = self._narrowed(run, candidates, snapshot, state, filters)
        feasible, rejections = self._filter(run, walk, snapshot, state, filters, enough)
        if not feasible and walk is not candidates:
            # no pod fits: walk them all, so the message counts each pod's first rejection
            feasible, rejections = self._filter(run, candidates, snapshot, state, filters, enough)
        if not feasible:
            return Decision(
                message=pending_message(len(candidates), rejections), rejections=rejections
            )
        return Decision(
            pod=self._best(run, feasible, snapshot, state, scorers), rejections=rejections
        )

    def _narrowed(
        self,
        run: PendingRun,
        candidates: list[PodState],
        snapshot: Snapshot,
        state: State,
        filters: list[Plugin],
    ) -> list[PodState]:
        """The candidates every Filter's PreFilterResult allows, in the walk's order (the
        candidates themselves when none narrows them)."""
        allowed: set[str] | None = None
        for plugin in filters:
            names = plugin.pre_filter_pods(run, snapshot, state)
            if names is not None:
                allowed = names if allowed is None else allowed & names
        if allowed is None or len(allowed) >= len(candidates):
            return candidates
        return snapshot.candidates_named(run, allowed)

    def _filter(
        self,
        run: PendingRun,
        candidates: list[PodState],
        snapshot: Snapshot,
        state: State,
        filters: list[Plugin],
        enough: int,
    ) -> tuple[list[PodState], Rejections]:
        """The feasible pods (at most ``enough`` of them: the walk stops there), and per
        (plugin, reason) how many of the pods walked the first rejection hit. When no pod is
        feasible every pod was walked, so a Pending message counts them all."""
        feasible: list[PodState] = []
        rejections: Rejections = Counter()
        for pod in candidates:
            if len(feasible) >= enough:
                break
            for plugin in filters:
                reason = plugin.filter(run, pod, snapshot, state)
                if reason is not None:
                    rejections[plugin.name, reason] += 1
                    break
            else:
                feasible.append(pod)
        return feasible, rejections

    def _best(
        self,
        run: PendingRun,
        feasible: list[PodState],
        snapshot: Snapshot,
        state: State,
        scorers: list[Plugin],
    ) -> PodState:
        if len(feasible) == 1:
            return feasible[0]
        if not scorers:
            return min(feasible, key=lambda pod: pod.name)
        if len(scorers) == 1 and _lowest_raw_wins(scorers[0]):
            # one plugin's normalised top score is exactly its lowest raw score's: the same
            # pod as summing, without normalising
            score = scorers[0].score
            return min(feasible, key=lambda pod: (score(run, pod, snapshot, state), pod.name))
        totals = self.totals(run, feasible, snapshot, state, scorers)
        # highest total wins; ties go to the smallest pod name
        return min(feasible, key=lambda pod: (-totals[pod.name], pod.name))

    def totals(
        self,
        run: PendingRun,
        feasible: list[PodState],
        snapshot: Snapshot,
        state: State,
        scorers: list[Plugin] | None = None,
    ) -> dict[str, int]:
        """Pod name -> the sum of every Score plugin's normalised score (of ``scorers``, the
        plugins whose PreScore said they score this Run, when known)."""
        totals = dict.fromkeys((pod.name for pod in feasible), 0)
        if scorers is None:
            scorers = [p for p in self.scorers if p.pre_score(run, snapshot, state)]
        for plugin in scorers:
            raw = {pod.name: plugin.score(run, pod, snapshot, state) for pod in feasible}
            for name, value in plugin.normalize(raw).items():
                if not 0 <= value <= MAX_SCORE:
                    raise ValueError(
                        f"{plugin.name} normalised pod {name} to {value}, outside 0..{MAX_SCORE}"
                    )
                totals[name] += value
        return totals
