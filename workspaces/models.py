"""PersistentWorkspace (seed 002): a workspace boundary and its lifecycle, bound to one Runtime
Pod in the initial ``RuntimePodLocal`` mode.

The fields the controllers and the scheduler query (runtime, phase, the bound pod's name and
UID, last use, the TTL) are indexed columns kept in step with spec/status by ``sync_columns``.
This module imports no other app: the scheduler reads it to fence Runs onto the bound pod.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import models

from portal.machinery.conditions import time_or_none
from portal.machinery.objects import NamespacedObject, unique_name_constraint


class WorkspacePhase(models.TextChoices):
    PENDING = "Pending"  # waiting for a ready Runtime Pod to bind to
    BOUND = "Bound"  # on status.boundPod (name AND uid)
    LOST = "Lost"  # the bound pod is gone (or its name now has another uid): never rebound
    RELEASED = "Released"  # cleanup requested: terminal for scheduling


class WorkspaceMode(models.TextChoices):
    RUNTIME_POD_LOCAL = "RuntimePodLocal"


class CleanupPolicy(models.TextChoices):
    DELETE_AFTER_TTL = "DeleteAfterTTL"
    RETAIN = "Retain"


# The in-pod path of a RuntimePodLocal workspace: below the Runtime Pod's /workspace volume.
PERSISTENT_ROOT = "/workspace/persistent"
# Holds a workspace object until the bound pod's runtimed has deleted its bytes.
WORKSPACE_CLEANUP = "kruntimes.io/workspace-cleanup"


def workspace_path(name: str) -> str:
    return f"{PERSISTENT_ROOT}/{name}"


class PersistentWorkspace(NamespacedObject):
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)
    runtime = models.CharField(max_length=63, db_index=True, editable=False, default="")
    phase = models.CharField(
        max_length=16,
        choices=WorkspacePhase.choices,
        default=WorkspacePhase.PENDING,
        db_index=True,
        editable=False,
    )
    bound_pod = models.CharField(
        max_length=253, blank=True, default="", db_index=True, editable=False
    )
    bound_pod_uid = models.CharField(max_length=36, blank=True, default="", editable=False)
    last_used = models.DateTimeField(null=True, blank=True, editable=False)
    cleanup_policy = models.CharField(
        max_length=16,
        choices=CleanupPolicy.choices,
        default=CleanupPolicy.DELETE_AFTER_TTL,
        editable=False,
    )
    ttl_after_unused = models.DurationField(null=True, blank=True, editable=False)

    class Meta(NamespacedObject.Meta):
        constraints = [unique_name_constraint("persistentworkspace", namespaced=True)]

    @staticmethod
    def status_columns(status: dict) -> dict:
        """The indexed columns a status determines (the status writer updates both)."""
        status = status or {}
        return {
            "phase": status.get("phase") or WorkspacePhase.PENDING,
            "bound_pod": status.get("boundPod", "") or "",
            "bound_pod_uid": status.get("boundPodUID", "") or "",
            "last_used": time_or_none(status.get("lastUsedTime")),
        }

    def sync_columns(self) -> None:
        spec = self.spec or {}
        self.runtime = spec.get("runtime", "")
        self.cleanup_policy = spec.get("cleanupPolicy") or CleanupPolicy.DELETE_AFTER_TTL
        ttl = spec.get("ttlSecondsAfterUnused")
        self.ttl_after_unused = None if ttl is None else timedelta(seconds=int(ttl))
        for column, value in self.status_columns(self.status).items():
            setattr(self, column, value)

    @property
    def path(self) -> str:
        return workspace_path(self.name)
