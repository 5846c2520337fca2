"""When a Runtime Pod's silence may be held against it.

A pod that stops heartbeating may be dead, or the path between it and the control plane may
be down: a broker outage, or the control plane itself stopped for a while. Failing its Runs
in the second case would fail (and retry) attempts that are still running or already
finished, whose reports are on the way. So, as Kubernetes' node-lifecycle controller stops
evicting under large-scale disruption:

- silence counts only from the later of the pod's last heartbeat and the moment the control
  plane resumed after a gap in its own periodic pass (``resumed_at``): after an outage every
  pod gets a fresh grace to be heard from again;
- while most pods of a namespace, or of the whole installation, are silent at once (at least
  two of them, and ``DISRUPTED_SHARE`` or more), nobody's silence is held against them.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from scheduling import metrics
from scheduling.models import ControlPlaneMark

LAST_PASS = "reconcile"
RESUMED = "resumed"
DISRUPTED_SHARE = 0.55
MIN_SILENT_FOR_DISRUPTION = 2


def gap_after(interval_seconds: float) -> timedelta:
    """A pass later than this after the previous one means the control plane was cut off."""
    return timedelta(seconds=max(5.0, 1.5 * interval_seconds))


def note_pass(now: datetime, interval_seconds: float) -> datetime | None:
    """Record this periodic pass; returns when the control plane last resumed after a gap
    (now, when this pass ends one), or None if it never had one."""
    previous = ControlPlaneMark.objects.filter(name=LAST_PASS).values_list("at", flat=True).first()
    ControlPlaneMark.objects.update_or_create(name=LAST_PASS, defaults={"at": now})
    if previous is not None and now - previous > gap_after(interval_seconds):
        ControlPlaneMark.objects.update_or_create(name=RESUMED, defaults={"at": now})
        metrics.CONTROL_PLANE_GAPS.inc()
        return now
    return resumed_at()


def resumed_at() -> datetime | None:
    return ControlPlaneMark.objects.filter(name=RESUMED).values_list("at", flat=True).first()


@dataclass
class Silence:
    """Which pods are silent past ``after``, and whether that may be held against them."""

    now: datetime
    after: timedelta
    resumed: datetime | None = None
    disrupted: set[str] = field(default_factory=set)  # namespaces; "*" for everything

    def heard_since(self, last_heartbeat: datetime | None) -> datetime | None:
        if self.resumed is None:
            return last_heartbeat
        if last_heartbeat is None:
            return self.resumed
        return max(last_heartbeat, self.resumed)

    def is_silent(self, last_heartbeat: datetime | None) -> bool:
        since = self.heard_since(last_heartbeat)
        return since is None or self.now - since > self.after

    def counts_against(self, namespace: str) -> bool:
        return "*" not in self.disrupted and namespace not in self.disrupted


def assess(pods, now: datetime, after: timedelta, resumed: datetime | None) -> Silence:
    """The silence of ``pods`` (RuntimePod rows) and the namespaces it is not held against."""
    silence = Silence(now, after, resumed)
    total, silent = Counter(), Counter()
    for pod in pods:
        total[pod.namespace] += 1
        silent[pod.namespace] += silence.is_silent(pod.last_heartbeat)
    for namespace, count in silent.items():
        if _disrupted(count, total[namespace]):
            silence.disrupted.add(namespace)
    if _disrupted(sum(silent.values()), sum(total.values())):
        silence.disrupted.add("*")
    metrics.DISRUPTED_NAMESPACES.set(len(silence.disrupted - {"*"}))
    return silence


def _disrupted(silent: int, total: int) -> bool:
    return silent >= MIN_SILENT_FOR_DISRUPTION and silent >= DISRUPTED_SHARE * total
