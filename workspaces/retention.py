"""Retain means retain: a Runtime whose pods hold a ``Retain`` workspace's data is not deleted
from under it.

A RuntimePodLocal workspace's bytes live on its bound Runtime Pod; deleting the Runtime stops
its pods, and the workspace would go Lost with its data. Seed 002 lets only an explicit
deletion of the workspace remove a Retain workspace's data (TTL never does), so:

- while a ``Retain`` workspace is Bound (or Released, its bytes not yet deleted) on one of a
  Runtime's pods, the Runtime carries the finalizer ``kruntimes.io/retained-workspaces``
  (``scheduling.models.RETAINED_WORKSPACES``) and a ``RetainedWorkspaces`` condition naming
  them (reason ``RetainsWorkspaces``);
- a deleted Runtime then waits (reason ``WaitingForRetainedWorkspaces``); the providers keep
  its pods running (``scheduling.models.runtimes_with_pods``), so the data stays readable and
  an explicit workspace deletion still goes through its cleanup protocol on the bound pod;
- once none remains, the finalizer is removed and the deletion completes.

``DeleteAfterTTL`` workspaces never hold a Runtime. Level-triggered: ``reconcile_namespace``
runs in each pass of the workspace controller, after binding.
"""

from __future__ import annotations

import logging
from datetime import datetime

from portal.auth.identities import register_controller
from portal.machinery import history, store
from portal.machinery.admission import WriteContext
from portal.machinery.conditions import get_condition, set_condition
from portal.machinery.errors import StatusError
from portal.machinery.registry import registry
from scheduling.models import RETAINED_WORKSPACES, Runtime

from .models import CleanupPolicy, PersistentWorkspace, WorkspacePhase

log = logging.getLogger(__name__)

CONDITION = "RetainedWorkspaces"
WAITING = "WaitingForRetainedWorkspaces"
RETAINS = "RetainsWorkspaces"
NONE = "NoRetainedWorkspaces"
MESSAGE_LIMIT = 1024
HOLDING_PHASES = (WorkspacePhase.BOUND, WorkspacePhase.RELEASED)

RETENTION_CONTROLLER = WriteContext(
    user=register_controller(
        "workspace-retention",
        [{"apiGroups": ["kruntimes.io"], "resources": ["runtimes"], "verbs": ["get", "patch"]}],
    )
)


def retained(namespace: str) -> dict[str, list[str]]:
    """Runtime name -> the Retain workspaces whose data its pods hold, sorted."""
    rows = PersistentWorkspace.objects.filter(
        namespace=namespace, cleanup_policy=CleanupPolicy.RETAIN, phase__in=HOLDING_PHASES
    ).values_list("runtime", "name")
    held: dict[str, list[str]] = {}
    for runtime, name in rows.order_by("name"):
        held.setdefault(runtime, []).append(name)
    return held


def condition(names: list[str], deleting: bool) -> tuple[str, str, str]:
    """The RetainedWorkspaces condition (status, reason, message) for ``names``."""
    if not names:
        return ("False", NONE, "no Retain PersistentWorkspace holds data on this Runtime's pods")
    listed = ", ".join(names)
    if deleting:
        message = (
            f"deletion waits for the Retain PersistentWorkspaces {listed}: their data lives on "
            "this Runtime's pods, which keep running until each workspace is deleted"
        )
        return ("True", WAITING, message[:MESSAGE_LIMIT])
    message = (
        f"the Retain PersistentWorkspaces {listed} keep their data on this Runtime's pods: "
        "deleting the Runtime waits until each of them is deleted"
    )
    return ("True", RETAINS, message[:MESSAGE_LIMIT])


def desired_status(runtime: Runtime, names: list[str], now: datetime) -> dict:
    """The Runtime's status with its RetainedWorkspaces condition (none written until a
    workspace first holds it)."""
    status = dict(runtime.status or {})
    if not names and get_condition(status.get("conditions"), CONDITION) is None:
        return status
    cstatus, reason, message = condition(names, runtime.deletion_timestamp is not None)
    status["conditions"] = set_condition(
        status.get("conditions"),
        type=CONDITION,
        status=cstatus,
        reason=reason,
        message=message,
        observed_generation=runtime.generation,
        now=now,
    )
    return status


def _set_finalizer(runtime: Runtime, wanted: bool) -> None:
    kind = registry.for_model(Runtime)
    if not wanted:
        store.remove_finalizer(kind, runtime, RETAINED_WORKSPACES, context=RETENTION_CONTROLLER)
        return
    store.patch(
        kind,
        runtime.namespace,
        runtime.name,
        {
            "metadata": {
                "finalizers": [*runtime.finalizers, RETAINED_WORKSPACES],
                "resourceVersion": str(runtime.resource_version),
            }
        },
        context=RETENTION_CONTROLLER,
    )


def reconcile_runtime(runtime: Runtime, names: list[str], now: datetime) -> bool:
    """Condition and finalizer as ``names`` call for; returns whether anything was written.
    A stale read loses its compare-and-set and the next pass tries again."""
    wrote = False
    status = desired_status(runtime, names, now)
    if status != (runtime.status or {}):
        wrote = history.compare_and_set(runtime, {"status": status})
        if not wrote:
            return False
    has = RETAINED_WORKSPACES in (runtime.finalizers or [])
    # a Runtime already deleted gets no new finalizer (as the API server refuses one)
    wanted = bool(names) and (has or runtime.deletion_timestamp is None)
    if wanted != has:
        try:
            _set_finalizer(runtime, wanted)
        except StatusError as exc:
            log.info("retention of Runtime %s/%s: %s", runtime.namespace, runtime.name, exc)
            return wrote
        wrote = True
    return wrote


def reconcile_namespace(namespace: str, now: datetime) -> int:
    """Every Runtime of the namespace against its Retain workspaces; returns Runtimes written."""
    held = retained(namespace)
    return sum(
        reconcile_runtime(runtime, held.get(runtime.name, []), now)
        for runtime in Runtime.objects.filter(namespace=namespace).order_by("pk")
    )
