"""Kubernetes Pods as RuntimePod rows: what a Pod object says, and the row it makes true.

A row is a Pod incarnation (namespace, name AND uid). The Pod deleted, ended (Succeeded or
Failed: evicted), or its name now carried by another UID is gone: its Runs end PodGone (or
PodTerminating when it was deleted gracefully, seen first with a deletionTimestamp) and a
PersistentWorkspace bound to it turns Lost (``rows.end_pod``). Ready is the Pod's Ready
condition AND a fresh runtimed heartbeat AND not terminating.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from scheduling import pod_writer, resources, runtime_status
from scheduling.models import KUBERNETES_PROVIDER, PodPhase, Runtime, RuntimePod
from scheduling.pods import NOT_READY_AFTER
from scheduling.providers import deployment, rows

log = logging.getLogger(__name__)
ENDED_PHASES = ("Succeeded", "Failed")  # restartPolicy Always: such a Pod never runs again


@dataclass(frozen=True)
class ObservedPod:
    namespace: str
    name: str
    uid: str
    runtime: str
    phase: str  # the Pod's status.phase
    condition_ready: bool
    deleting: bool
    labels: dict = field(default_factory=dict)
    annotations: dict = field(default_factory=dict)
    node: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.namespace, self.name, self.uid)

    @property
    def ended(self) -> bool:
        return self.phase in ENDED_PHASES

    @property
    def row_phase(self) -> str:
        if self.deleting:
            return PodPhase.TERMINATING
        return PodPhase.RUNNING if self.phase == "Running" else PodPhase.PENDING


def observed(obj: dict) -> ObservedPod:
    """The Pod as a plain record; ValueError for one that cannot be a Runtime Pod."""
    metadata = obj.get("metadata") or {}
    status = obj.get("status") or {}
    labels = metadata.get("labels") or {}
    missing = [
        what
        for what, value in (
            ("metadata.namespace", metadata.get("namespace")),
            ("metadata.name", metadata.get("name")),
            ("metadata.uid", metadata.get("uid")),
            (f"the {deployment.RUNTIME_LABEL} label", labels.get(deployment.RUNTIME_LABEL)),
        )
        if not isinstance(value, str) or not value
    ]
    if missing:
        raise ValueError(f"not a Runtime Pod: no {', '.join(missing)}")
    conditions = status.get("conditions") or []
    ready = any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in conditions
        if isinstance(c, dict)
    )
    return ObservedPod(
        namespace=metadata["namespace"],
        name=metadata["name"],
        uid=metadata["uid"],
        runtime=labels[deployment.RUNTIME_LABEL],
        phase=str(status.get("phase") or "Pending"),
        condition_ready=ready,
        deleting=bool(metadata.get("deletionTimestamp")),
        labels=dict(labels),
        annotations=dict(metadata.get("annotations") or {}),
        node=str((obj.get("spec") or {}).get("nodeName") or ""),
    )


def _capacity(pod: ObservedPod) -> dict[str, int]:
    spec = (
        Runtime.objects.filter(namespace=pod.namespace, name=pod.runtime)
        .values_list("spec", flat=True)
        .first()
    )
    return resources.pod_capacity(spec or {}, pod.annotations)


def _heard_recently(row: RuntimePod | None, now: datetime) -> bool:
    return bool(row and row.last_heartbeat and now - row.last_heartbeat <= NOT_READY_AFTER)


def apply_pod(pod: ObservedPod, now: datetime) -> bool:
    """Make the row of ``pod`` true; returns whether pods appeared, went or changed readiness."""
    with transaction.atomic():
        row = (
            RuntimePod.objects.select_for_update()
            .filter(namespace=pod.namespace, name=pod.name)
            .first()
        )
        changed = False
        if row is not None and str(row.uid) != pod.uid:
            # replaced under the same name: the old incarnation is gone with its data
            rows.end_pod(row.namespace, row.name, str(row.uid), now)
            row, changed = None, True
        if pod.ended:
            if row is not None:
                rows.end_pod(row.namespace, row.name, str(row.uid), now)
                changed = True
            return changed
        fields = {
            "runtime": pod.runtime,
            "provider": KUBERNETES_PROVIDER,
            "phase": pod.row_phase,
            "pod_ready": pod.condition_ready,
            "ready": pod.condition_ready and not pod.deleting and _heard_recently(row, now),
            "capacity": _capacity(pod),
            "labels": pod.labels,
            "annotations": pod.annotations,
            "host": pod.node,
        }
        if row is None:
            pod_writer.create(
                namespace=pod.namespace,
                name=pod.name,
                uid=pod.uid,
                workspace_path=deployment.WORKSPACE_PATH,
                **fields,
            )
            changed = True
        else:
            changed = changed or (row.ready, row.phase) != (fields["ready"], fields["phase"])
            pod_writer.update(row, **fields)
        if changed:
            runtime_status.sync_runtime_status(now, pod.namespace, pod.runtime)
    return changed


def forget_pod(namespace: str, name: str, uid: str, now: datetime) -> bool:
    """The Pod was deleted: its row (that incarnation only) is gone."""
    with transaction.atomic():
        row = RuntimePod.objects.filter(namespace=namespace, name=name, uid=uid).first()
        if row is None:
            return False
        rows.end_pod(namespace, name, uid, now)
        runtime_status.sync_runtime_status(now, namespace, row.runtime)
    return True


def forget_unlisted(listed: Iterable[tuple[str, str, str]], now: datetime) -> int:
    """After a full list: rows of Pods no longer there are gone (deleted while unwatched)."""
    keep = set(listed)
    gone = 0
    for namespace, name, uid in RuntimePod.objects.filter(provider=KUBERNETES_PROVIDER).values_list(
        "namespace", "name", "uid"
    ):
        if (namespace, name, str(uid)) in keep:
            continue
        try:
            gone += forget_pod(namespace, name, str(uid), now)
        except Exception:  # noqa: BLE001 - one row's error never stops the sweep
            log.exception("could not remove the row of gone pod %s/%s", namespace, name)
    return gone
