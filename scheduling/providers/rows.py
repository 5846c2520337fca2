"""What every provider does when one of its Runtime Pods is gone: the Runs bound to it end, its
row goes, recorded DELETED, so whoever watches pods (the workspace controller) hears of it."""

from __future__ import annotations

from datetime import datetime

from portal.machinery.events import send_on_commit
from runtimed.protocol import Reason
from scheduling import lifecycle, pod_writer, task_names
from scheduling.models import PodPhase, RuntimePod


def end_pod(namespace: str, name: str, uid: str, now: datetime) -> int:
    """Runs on the pod end PodTerminating when it was being stopped on purpose, else PodGone;
    returns how many ended. A PersistentWorkspace bound to it turns Lost (its data went with
    the pod) when the workspace controller, woken by the DELETED event, runs."""
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
    pod_writer.delete_where(RuntimePod.objects.filter(namespace=namespace, name=name, uid=uid))
    send_on_commit(task_names.RECONCILE)
    return ended
