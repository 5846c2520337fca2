"""Runtime, RuntimePod and Run: the rows the scheduler snapshots and the API serves.

Fields that are queried or shown (runtime, phase, bound pod, attempt) are real indexed
columns kept in step with spec/status by ``sync_columns``; nested structures stay JSON.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from django.db import models
from django.utils import timezone

from portal.machinery.conditions import time_or_none
from portal.machinery.objects import NamespacedObject, unique_name_constraint
from runtimed.protocol import Phase


class RunPhase(models.TextChoices):
    PENDING = "Pending"
    SCHEDULED = "Scheduled"
    RUNNING = Phase.RUNNING
    READY = Phase.READY
    SUCCEEDED = Phase.SUCCEEDED
    FAILED = Phase.FAILED
    TIMEOUT = Phase.TIMEOUT
    CANCELLED = Phase.CANCELLED


class PodPhase(models.TextChoices):
    """A Runtime Pod's phase as its provider reports it."""

    PENDING = "Pending"  # started, no heartbeat yet
    RUNNING = "Running"  # heartbeating: placeable while ready
    TERMINATING = "Terminating"  # being stopped on purpose: nothing new lands on it


LOCAL_PROVIDER = "local"  # RuntimePod.provider: a runtimed process on this machine
KUBERNETES_PROVIDER = "kubernetes"  # a Pod of a Runtime's Deployment
ACTIVE_PHASES = (RunPhase.SCHEDULED, RunPhase.RUNNING, RunPhase.READY)
TERMINAL_PHASES = (RunPhase.SUCCEEDED, RunPhase.FAILED, RunPhase.TIMEOUT, RunPhase.CANCELLED)
PRIORITY_ANNOTATION = "scheduling.kruntimes.io/priority"
# A deleted Runtime waits behind it while its pods hold a Retain workspace's data (the
# workspaces app sets and removes it); the providers keep such a Runtime's pods running.
RETAINED_WORKSPACES = "kruntimes.io/retained-workspaces"


class Runtime(NamespacedObject):
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)
    replicas = models.PositiveIntegerField(default=1, editable=False)
    ready_replicas = models.PositiveIntegerField(default=0, editable=False)

    class Meta(NamespacedObject.Meta):
        constraints = [unique_name_constraint("runtime", namespaced=True)]

    def sync_columns(self) -> None:
        self.replicas = int((self.spec or {}).get("replicas") or 1)
        self.ready_replicas = int((self.status or {}).get("readyReplicas") or 0)


def runtimes_with_pods() -> models.QuerySet[Runtime]:
    """The Runtimes whose pods the providers keep: live ones, and deleted ones still waiting
    for their Retain workspaces (their data lives on those pods)."""
    waiting = [
        pk
        for pk, finalizers in Runtime.objects.filter(deletion_timestamp__isnull=False).values_list(
            "pk", "finalizers"
        )
        if RETAINED_WORKSPACES in (finalizers or [])
    ]
    return Runtime.objects.filter(
        models.Q(deletion_timestamp__isnull=True) | models.Q(pk__in=waiting)
    )


class RuntimePod(models.Model):
    """A Runtime Pod as its provider reports it (local process or Kubernetes Pod).

    A read-only API kind: providers keep these rows true, each change recorded in the watch
    history; the scheduler snapshots them.
    """

    namespace = models.CharField(max_length=63, db_index=True)
    runtime = models.CharField(max_length=63, db_index=True)
    name = models.CharField(max_length=253)
    uid = models.UUIDField(default=uuid.uuid4, unique=True)
    provider = models.CharField(max_length=16, default="local")
    phase = models.CharField(
        max_length=16, choices=PodPhase.choices, default=PodPhase.PENDING, db_index=True
    )
    ready = models.BooleanField(default=False, db_index=True)
    # The provider's own word that the pod can serve (Kubernetes: the Pod's Ready condition;
    # local: always). ``ready`` is this AND a fresh runtimed heartbeat AND not Terminating.
    pod_ready = models.BooleanField(default=True)
    capacity = models.JSONField(default=dict, blank=True)
    labels = models.JSONField(default=dict, blank=True)
    annotations = models.JSONField(default=dict, blank=True)
    workspace_path = models.CharField(max_length=4096, blank=True, default="")
    host = models.CharField(max_length=253, blank=True, default="")
    pid = models.IntegerField(null=True, blank=True)
    # where the function gateway reaches this pod's runtimed (its heartbeat says): unix:/path
    # or host:port; "" until it serves functions
    dataplane_address = models.CharField(max_length=4096, blank=True, default="")
    # The runtimed heartbeat: when, and which Run UIDs (and attempts) it is executing.
    last_heartbeat = models.DateTimeField(null=True, blank=True, db_index=True)
    active_runs = models.JSONField(default=list, blank=True)
    # Which start of the pod the row hears from (a local pod keeps its name, UID and disk across
    # a restart of ``manage.py up``, as a StatefulSet pod does): bumped at each start and stop;
    # a heartbeat of another one (queued before the restart) is refused.
    incarnation = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(default=timezone.now)
    # the cluster resourceVersion of the pod's last recorded change (``pod_writer``)
    resource_version = models.BigIntegerField(default=0, db_index=True, editable=False)

    class Meta:
        ordering = ("namespace", "runtime", "name")
        constraints = [
            models.UniqueConstraint(fields=("namespace", "name"), name="runtimepod_unique_name")
        ]

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


class Run(NamespacedObject):
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)
    runtime = models.CharField(max_length=63, db_index=True, editable=False, default="")
    phase = models.CharField(
        max_length=16,
        choices=RunPhase.choices,
        default=RunPhase.PENDING,
        db_index=True,
        editable=False,
    )
    assigned_pod = models.CharField(
        max_length=253, blank=True, default="", db_index=True, editable=False
    )
    assigned_pod_uid = models.CharField(max_length=36, blank=True, default="", editable=False)
    priority = models.IntegerField(default=0, editable=False)
    attempt = models.PositiveIntegerField(default=1, editable=False)
    cancel_requested = models.BooleanField(default=False, editable=False)
    # spec.resources.requests with the default filled: what the scheduler sums per pod
    requests = models.JSONField(default=dict, blank=True, editable=False)
    # When the bound Run was last handed to its pod's queue (re-sent while not yet Running).
    dispatched_at = models.DateTimeField(null=True, blank=True, editable=False)
    # A retried Run waits out its backoff: the scheduler leaves it alone until then.
    not_before = models.DateTimeField(null=True, blank=True, editable=False)
    # status.completionTime as a column: what ttlSecondsAfterFinished counts from.
    finished_at = models.DateTimeField(null=True, blank=True, editable=False)
    # spec.ttlSecondsAfterFinished: the finished Run is deleted this long after finished_at.
    ttl_after_finished = models.DurationField(null=True, blank=True, editable=False)
    # finished_at + ttl_after_finished, stored so the TTL pass finds the due Runs by an index
    # (a sum of two columns cannot use one); written with either (see ``expiry``).
    expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    # When the cancel of a bound Run was last sent to its pod (re-sent until it ends).
    cancel_sent_at = models.DateTimeField(null=True, blank=True, editable=False)
    # spec.workspace.name: the PersistentWorkspace the Run uses ("" for none), indexed so the
    # workspace controller tracks active use and the scheduler fences by it.
    workspace = models.CharField(
        max_length=253, blank=True, default="", db_index=True, editable=False
    )

    class Meta(NamespacedObject.Meta):
        constraints = [unique_name_constraint("run", namespaced=True)]
        indexes = [
            # the scheduler's queue in its order, holding only what waits: a page is a walk
            # of its head, whatever the planner believes of how many Runs are Pending (the
            # index the order needs; a bound Run leaves it, so binds maintain less)
            models.Index(
                fields=("-priority", "creation_timestamp", "id"),
                name="run_pending_queue",
                condition=models.Q(phase="Pending", deletion_timestamp__isnull=True),
            ),
            models.Index(fields=("finished_at",), name="run_finished_at"),
            # the admin's default order, newest first (scanned backwards)
            models.Index(fields=("creation_timestamp", "id"), name="run_newest_first"),
            # the TTL pass: only Runs that will expire and are not being deleted yet
            models.Index(
                fields=("expires_at",),
                name="run_ttl_due",
                condition=models.Q(expires_at__isnull=False, deletion_timestamp__isnull=True),
            ),
            # whether any function-mode Run exists (the admin offers the Ready phase then):
            # a lookup in this small index, not a scan of every spec
            models.Index(
                fields=("id",),
                name="run_function_mode",
                condition=models.Q(spec__mode__has_key="function"),
            ),
        ]

    def changes_announced(self) -> None:
        super().changes_announced()
        self._phase_read = self.__dict__.get("phase")

    def desired_state(self) -> tuple[Any, ...]:
        return (*super().desired_state(), self.__dict__.get("cancel_requested"))

    @property
    def phase_changed(self) -> bool:
        """Whether ``phase`` differs from what was read (a new Run: never)."""
        read = getattr(self, "_phase_read", None)
        return read is not None and read != self.phase

    @staticmethod
    def status_columns(status: dict) -> dict:
        """The indexed columns a status determines (controllers update both together)."""
        status = status or {}
        return {
            "phase": status.get("phase") or RunPhase.PENDING,
            "assigned_pod": status.get("assignedPod", "") or "",
            "assigned_pod_uid": status.get("assignedPodUID", "") or "",
            "attempt": int(status.get("attempt") or 1),
            "finished_at": time_or_none(status.get("completionTime")),
        }

    def sync_columns(self) -> None:
        spec = self.spec or {}
        self.runtime = spec.get("runtime", "")
        self.workspace = (spec.get("workspace") or {}).get("name", "") or ""
        for column, value in self.status_columns(self.status).items():
            setattr(self, column, value)
        self.cancel_requested = bool(spec.get("cancelRequested"))
        ttl = spec.get("ttlSecondsAfterFinished")
        self.ttl_after_finished = None if ttl is None else timedelta(seconds=int(ttl))
        self.expires_at = (
            None
            if self.finished_at is None or self.ttl_after_finished is None
            else self.finished_at + self.ttl_after_finished
        )
        self.requests = ((spec.get("resources") or {}).get("requests")) or {"runs": 1}
        try:
            self.priority = int((self.annotations or {}).get(PRIORITY_ANNOTATION, 0))
        except (TypeError, ValueError):
            self.priority = 0

    @staticmethod
    def expiry(finished_at: datetime | None) -> models.Expression | None:
        """``expires_at`` for a write that sets ``finished_at`` on rows whose TTL it does not
        know: the row's own ``ttl_after_finished`` added in SQL."""
        if finished_at is None:
            return None
        return models.ExpressionWrapper(
            models.Value(finished_at, output_field=models.DateTimeField())
            + models.F("ttl_after_finished"),
            output_field=models.DateTimeField(),
        )

    @property
    def is_terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def is_function(self) -> bool:
        """A function-mode Run: it serves (Ready) until it is ended, rather than running once."""
        return isinstance(self.spec, dict) and "function" in (self.spec.get("mode") or {})

    @property
    def is_stopping(self) -> bool:
        """Cancel requested, or deleted: a bound attempt is killed and never retried
        (``STOPPING`` is the same test as a query)."""
        return self.cancel_requested or self.deletion_timestamp is not None


STOPPING = models.Q(cancel_requested=True) | models.Q(deletion_timestamp__isnull=False)


class RunLogChunk(models.Model):
    """A piece of one attempt's combined stdout/stderr, as runtimed shipped it.

    ``offset`` is the byte offset of the chunk in the attempt's raw output, so a duplicate
    delivery is recognised and a gap is visible; the oldest chunks are dropped once an
    attempt's log is over its bound (the reader shows a truncation marker).
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="log_chunks")
    attempt = models.PositiveIntegerField()
    offset = models.BigIntegerField()
    size = models.PositiveIntegerField()  # raw bytes this chunk stands for
    text = models.TextField()
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ("run", "attempt", "offset")
        constraints = [
            models.UniqueConstraint(
                fields=("run", "attempt", "offset"), name="runlogchunk_unique_offset"
            )
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} attempt {self.attempt} @{self.offset}"


class BindEpoch(models.Model):
    """One row counting bind transactions: every bind takes the next value first, holding the
    row until it commits. A binder that finds the value one past its own last bind knows no one
    else bound anywhere since (see ``scheduler.bind.PodLedger``)."""

    value = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"bind epoch {self.value}"


class ControlPlaneMark(models.Model):
    """A moment the control plane keeps about itself: when its last reconcile pass ran, and
    when it last resumed after a gap (a broker outage, a restart). Silence of Runtime Pods is
    only held against them from the later of their last heartbeat and that resumption."""

    name = models.CharField(max_length=63, unique=True)
    at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.name} at {self.at}"
