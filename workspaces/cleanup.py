"""The PersistentWorkspace cleanup protocol (seed 002, Cleanup Protocol 1-5): the controller's
half. The controller owns the logical lifecycle and is the only status writer; the bytes on the
pod are deleted by that pod's runtimed (``runtimed.workspaces``), never by exec.

1. Runs are tracked by ``spec.workspace.name`` (the indexed ``Run.workspace``): a workspace is
   active while any Run using it is not terminal. When the last one ends, ``lastUsedTime`` is
   set once (to when it ended); a freshly Bound workspace counts its unused time from binding.
2. ``DeleteAfterTTL`` starts cleanup only when ``ttlSecondsAfterUnused`` is set and has passed;
   no TTL never does; ``Retain`` never starts it automatically.
3. Starting cleanup sets Released (terminal for scheduling: no new Run may claim it), then
   requests deletion; the ``kruntimes.io/workspace-cleanup`` finalizer holds the object.
4. The bound pod's runtimed, asked by ``runtimed.delete_workspace`` (re-sent every pass until it
   answers), confirms no local Run uses it, deletes only ``/workspace/persistent/<name>`` and
   answers ``workspaces.workspace_deleted``; the controller then removes the finalizer.
5. A workspace whose pod is gone is Lost: no bytes are left, the finalizer goes without waiting.

An explicit deletion follows the same steps (a Bound workspace is Released first), whatever the
policy: Retain only stops the automatic TTL start.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from celery import current_app
from django.db.models import Max, Q

from portal.auth.identities import register_controller
from portal.machinery import store
from portal.machinery.admission import WriteContext, authorize
from portal.machinery.conditions import time_or_none
from portal.machinery.errors import StatusError
from portal.machinery.registry import registry
from runtimed import protocol
from scheduling.models import ACTIVE_PHASES, TERMINAL_PHASES, Run, RuntimePod

from . import status as workspace_status
from .models import WORKSPACE_CLEANUP, CleanupPolicy, PersistentWorkspace, WorkspacePhase

log = logging.getLogger(__name__)

WORKSPACE_CONTROLLER = WriteContext(
    user=register_controller(
        "workspace-controller",
        [
            {
                "apiGroups": ["kruntimes.io"],
                "resources": ["persistentworkspaces"],
                "verbs": ["get", "list", "delete", "patch"],
            }
        ],
    )
)


@dataclass
class Counts:
    used: int = 0  # lastUsedTime written
    released: int = 0  # cleanup started (TTL, deletion, operator)
    requested: int = 0  # delete requests sent to a bound pod's runtimed
    finalized: int = 0  # finalizer removed
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {
            "used": self.used,
            "released": self.released,
            "requested": self.requested,
            "finalized": self.finalized,
        }


def _kind():
    return registry.for_model(PersistentWorkspace)


def bound_since(ws: PersistentWorkspace) -> datetime | None:
    """When the workspace was bound: its Bound condition's last transition."""
    return time_or_none(
        workspace_status.condition(ws.status or {}, "Bound").get("lastTransitionTime")
    )


def expired(ws: PersistentWorkspace, active: bool, now: datetime) -> bool:
    """Rule 2: only DeleteAfterTTL with a TTL, only while unused, only once it has passed."""
    if ws.cleanup_policy != CleanupPolicy.DELETE_AFTER_TTL or ws.ttl_after_unused is None:
        return False
    if active or ws.phase != WorkspacePhase.BOUND:
        return False
    since = ws.last_used or bound_since(ws)
    return since is not None and now >= since + ws.ttl_after_unused


def release(
    ws: PersistentWorkspace, now: datetime, reason: str, message: str, context: WriteContext
) -> bool:
    """Rule 3: Released, then deletion requested (the finalizer keeps the object).

    Releasing is the start of a deletion: the writer must be allowed to delete the workspace
    before anything is written (a 403 leaves it Bound)."""
    context = authorize(context, _kind(), "delete", ws.namespace, ws.name)
    if ws.phase == WorkspacePhase.BOUND:
        status = workspace_status.released(ws.status or {}, reason, message, now, ws.generation)
        if not workspace_status.write(ws, status):
            return False  # changed meanwhile: the next pass looks again
    if ws.phase != WorkspacePhase.RELEASED:
        return False
    if ws.deletion_timestamp is None:
        store.delete(_kind(), ws.namespace, ws.name, context=context)
    log.info("PersistentWorkspace %s/%s released: %s", ws.namespace, ws.name, message)
    return True


def _remove_finalizer(ws: PersistentWorkspace) -> bool:
    try:
        store.remove_finalizer(_kind(), ws, WORKSPACE_CLEANUP, context=WORKSPACE_CONTROLLER)
    except StatusError as exc:  # changed meanwhile: the next pass retries
        log.info("finalizer of %s/%s not removed yet: %s", ws.namespace, ws.name, exc)
        return False
    return True


def delete_request(ws: PersistentWorkspace) -> protocol.DeleteWorkspacePayload:
    return {
        "namespace": ws.namespace,
        "name": ws.name,
        "uid": str(ws.uid),
        "pod": {"name": ws.bound_pod, "uid": ws.bound_pod_uid},
    }


def _ask_pod(ws: PersistentWorkspace, app) -> bool:
    try:
        app.send_task(
            protocol.DELETE_WORKSPACE_TASK,
            kwargs={"payload": delete_request(ws)},
            queue=protocol.pod_queue(ws.bound_pod),
        )
    except Exception:  # noqa: BLE001 - broker down: the next pass re-sends
        log.warning("could not ask %s to delete workspace %s", ws.bound_pod, ws.name, exc_info=True)
        return False
    return True


def finish_deletion(ws: PersistentWorkspace, now: datetime, counts: Counts, app=None) -> None:
    """A deleted workspace: Pending or Lost ones hold no bytes (rule 5); a Bound one is
    Released first; a Released one waits for its live pod's runtimed to delete the bytes."""
    if WORKSPACE_CLEANUP not in (ws.finalizers or []):
        return
    if ws.phase == WorkspacePhase.BOUND:
        status = workspace_status.released(
            ws.status or {}, "Deleted", "the workspace was deleted", now, ws.generation
        )
        if not workspace_status.write(ws, status):
            return
        counts.released += 1
    if ws.phase in (WorkspacePhase.PENDING, WorkspacePhase.LOST):
        counts.finalized += _remove_finalizer(ws)
        return
    pod = RuntimePod.objects.filter(namespace=ws.namespace, name=ws.bound_pod).first()
    if pod is None or str(pod.uid) != ws.bound_pod_uid:
        return  # the binding controller turns it Lost; the next pass releases the finalizer
    if bound_runs(ws):
        return  # a Run bound before the release may still be on its way to the pod
    counts.requested += _ask_pod(ws, app or current_app)


def bound_runs(ws: PersistentWorkspace) -> bool:
    """Runs using the workspace that were bound and have not ended: runtimed may not have
    started them yet (a message fetched, not begun), so it cannot see them; wait for them. A
    Pending one never will be bound (Released is fenced) and does not hold cleanup."""
    return Run.objects.filter(
        namespace=ws.namespace, workspace=ws.name, phase__in=ACTIVE_PHASES
    ).exists()


def confirm_deleted(reply: protocol.WorkspaceDeleted) -> bool:
    """Rule 4's last step: the bound pod's runtimed deleted the bytes; drop the finalizer.

    Only the pod the workspace is bound to (name AND uid), only for this workspace's UID, and
    only once deletion was requested: any other reply changes nothing."""
    ws = PersistentWorkspace.objects.filter(
        namespace=reply.get("namespace", ""), name=reply.get("name", ""), uid=reply.get("uid")
    ).first()
    if ws is None or ws.deletion_timestamp is None or ws.phase != WorkspacePhase.RELEASED:
        return False
    if (reply.get("podName"), reply.get("podUID")) != (ws.bound_pod, ws.bound_pod_uid):
        log.warning("ignoring a workspace-deleted reply for %s from another pod", ws.name)
        return False
    return _remove_finalizer(ws)


def _usage(namespace: str | None) -> tuple[set[tuple[str, str]], dict[tuple[str, str], datetime]]:
    """(workspaces with a non-terminal Run, workspace -> when its last Run ended)."""
    # a range on the indexed column (every name is > ""): the Runs that use a workspace,
    # found by the index, never a scan of every Run (``<> ''`` cannot use it)
    runs = Run.objects.filter(workspace__gt="")
    if namespace is not None:
        runs = runs.filter(namespace=namespace)
    active = set(
        runs.exclude(phase__in=TERMINAL_PHASES).values_list("namespace", "workspace").distinct()
    )
    ended = {
        (row["namespace"], row["workspace"]): row["last"]
        for row in runs.filter(phase__in=TERMINAL_PHASES, finished_at__isnull=False)
        .values("namespace", "workspace")
        .annotate(last=Max("finished_at"))
    }
    return active, ended


def track_use(ws: PersistentWorkspace, active: bool, last_end: datetime | None) -> bool:
    """Rule 1: lastUsedTime once the last active Run has ended (and never backwards)."""
    if active or last_end is None or ws.phase != WorkspacePhase.BOUND:
        return False
    if ws.last_used is not None and last_end <= ws.last_used:
        return False
    return workspace_status.write(ws, workspace_status.used(ws.status or {}, last_end))


def reconcile(now: datetime, namespace: str | None = None, app=None) -> dict[str, int]:
    counts = Counts()
    active, ended = _usage(namespace)
    workspaces = PersistentWorkspace.objects.filter(
        Q(deletion_timestamp__isnull=False)
        | Q(phase__in=(WorkspacePhase.BOUND, WorkspacePhase.RELEASED))
    )
    if namespace is not None:
        workspaces = workspaces.filter(namespace=namespace)
    for ws in workspaces:
        key = (ws.namespace, ws.name)
        if ws.deletion_timestamp is not None:
            finish_deletion(ws, now, counts, app)
            continue
        counts.used += track_use(ws, key in active, ended.get(key))
        if expired(ws, key in active, now):
            ttl = int(ws.ttl_after_unused.total_seconds())  # type: ignore[union-attr]
            counts.released += release(
                ws,
                now,
                "TTLExpired",
                f"unused for ttlSecondsAfterUnused={ttl}s",
                WORKSPACE_CONTROLLER,
            )
        elif ws.phase == WorkspacePhase.RELEASED:  # released, deletion not requested yet
            release(ws, now, "", "", WORKSPACE_CONTROLLER)
    return counts.as_dict()
