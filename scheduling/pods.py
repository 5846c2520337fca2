"""RuntimePod rows kept true: runtimed heartbeats mark a provider's pod Ready; silence makes it
not ready; a local pod silent for good is removed (a Kubernetes pod's row goes with its Pod). Capacity is read from the Runtime (and pod annotations) so
an edited Runtime takes effect at the next heartbeat."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction

from portal.machinery.conditions import parse_time
from scheduling import disruption, pod_writer, resources
from scheduling.models import KUBERNETES_PROVIDER, PodPhase, Runtime, RuntimePod

NOT_READY_AFTER = timedelta(seconds=15)
REMOVE_AFTER = timedelta(minutes=5)


def _capacity(namespace: str, runtime: str, annotations: dict) -> dict[str, int]:
    spec = (
        Runtime.objects.filter(namespace=namespace, name=runtime)
        .values_list("spec", flat=True)
        .first()
    )
    return resources.pod_capacity(spec or {}, annotations)


def is_stale(beat: dict, now: datetime) -> bool:
    """A heartbeat older than a pod may stay silent (left in a queue while the control plane
    was down): it says nothing about the pod now, and must not resurrect a gone pod."""
    try:
        sent = parse_time(beat.get("time"))
    except ValueError:
        return False  # an old runtimed without a time: trust it
    return now - sent > NOT_READY_AFTER


def incarnation(beat: dict) -> int:
    """Which start of its pod sent the beat (0: a pod that never restarts under one UID)."""
    value = beat.get("podIncarnation")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def record_heartbeat(beat: dict, now: datetime) -> tuple[RuntimePod | None, bool]:
    """Update the pod a heartbeat names. Returns (pod, became_ready); (None, False) when the
    heartbeat is stale or names no pod its provider keeps.

    Providers own the rows: a heartbeat never creates one, and never revives a pod whose row
    its provider removed or replaced (another UID under the name) or started again (another
    incarnation of the same UID: a local pod restarted with ``manage.py up``), so a late beat
    from a gone or stopped pod cannot come back as a Ready ghost. A Terminating pod stays
    Terminating."""
    if is_stale(beat, now):
        return None, False
    namespace, name, uid = beat["namespace"], beat["podName"], beat["podUID"]
    with transaction.atomic():
        pod = RuntimePod.objects.select_for_update().filter(namespace=namespace, name=name).first()
        if pod is None or str(pod.uid) != uid or incarnation(beat) != pod.incarnation:
            return None, False
        terminating = pod.phase == PodPhase.TERMINATING
        fields = {
            "ready": pod.pod_ready and not terminating,
            "phase": pod.phase if terminating else PodPhase.RUNNING,
            "last_heartbeat": now,
            "active_runs": list(beat.get("activeRuns") or []),
            "workspace_path": beat.get("workspacePath", "") or pod.workspace_path,
            "host": beat.get("host", "") or pod.host,
            "pid": beat.get("pid"),
            "dataplane_address": str(beat.get("dataplane") or ""),
            "capacity": _capacity(namespace, pod.runtime, pod.annotations),
        }
        became_ready = fields["ready"] and not pod.ready
        # recorded only when something besides the heartbeat moved: a beat that changes
        # nothing else is no news to the watchers (the scheduler reads freshness by time)
        pod_writer.update(pod, **fields)
    return pod, became_ready


def reconcile_pods(now: datetime, resumed: datetime | None = None) -> dict[str, int]:
    """Silent pods stop being Ready; pods silent for good are removed, but not while most
    pods are silent at once nor sooner than REMOVE_AFTER since the control plane resumed
    after a gap (see ``disruption``: it may be our silence, not theirs)."""
    stale = RuntimePod.objects.filter(ready=True, last_heartbeat__lt=now - NOT_READY_AFTER)
    not_ready = pod_writer.update_where(stale, ready=False)
    removed = 0
    if resumed is None or now - resumed > REMOVE_AFTER:
        silence = disruption.assess(
            RuntimePod.objects.only("namespace", "last_heartbeat"), now, NOT_READY_AFTER, resumed
        )
        # a Kubernetes pod's row is the API's word: it goes when the Pod goes, silent or not
        gone = RuntimePod.objects.filter(last_heartbeat__lt=now - REMOVE_AFTER).exclude(
            provider=KUBERNETES_PROVIDER
        )
        if "*" not in silence.disrupted:
            gone = gone.exclude(namespace__in=silence.disrupted)
            removed = pod_writer.delete_where(gone)
    return {"not_ready": not_ready, "removed": removed}
