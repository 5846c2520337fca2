"""What every provider does when one of its Runtime Pods is gone: the Runs bound to it end, its
row goes, and whoever follows pods (the scheduler, the workspace controller) hears of it."""

from __future__ import annotations

from datetime import datetime

from portal.machinery.events import send_on_commit
from runtimed.protocol import Reason
from scheduling import lifecycle, task_names
from scheduling.models import PodPhase, RuntimePod
from scheduling.signals import runtime_pods_changed


def end_pod(namespace: str, name: str, uid: str, now: datetime) -> int:
    """Runs on the pod end PodTerminating when it was being stopped on purpose, else PodGone;
    returns how many ended. A PersistentWorkspace bound to it turns Lost (its data went with
    the pod) when the workspace controller runs on the signal."""
    row = RuntimePod.objects.filter(namespace=namespace, name=name, uid=uid).first()
    if row is not None and row.phase == PodPhase.TERMINATING:
        ended = lifecycle.fail_runs_on_pod(
            namespace,
            name,
            uid,
            Reason.POD_TERMINATING,
            "the Runtime Pod was stopped while this Run executed",
            now,
        )
    else:
        ended = lifecycle.fail_runs_on_pod(
            namespace,
            name,
            uid,
            Reason.POD_GONE,
            "the Runtime Pod this Run was bound to is gone",
            now,
        )
    RuntimePod.objects.filter(namespace=namespace, name=name, uid=uid).delete()
    send_on_commit(task_names.RECONCILE)
    runtime_pods_changed.send(sender=None, namespace=namespace)
    return ended
