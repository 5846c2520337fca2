"""The bench namespace: one Runtime, P ready Runtime Pods and N pending Runs (setup, untimed).

The Namespace and the Runtime go through the store (the API write path). Runs are many, so
each distinct manifest is validated once through the store (a dry run: serializers,
validators, namespace check) and then cloned into ``Run.objects.bulk_create`` with
``sync_columns()`` called on every instance, so the indexed columns are what the API writes.

Affinity modes (``group`` Runs share the label the terms select):

- ``none``: no affinity.
- ``required``: cohorts of 10 labelled ``cohort=c<k>``, each Run with a required runAffinity
  term selecting its own cohort: the first seeds it (bootstrap), the rest follow its pod.
- ``preferred``: the same cohorts with a preferred term of weight 50.
- ``anti``: groups labelled ``spread=s<k>`` of at most min(10, P // 2) Runs, each Run with a
  required runAntiAffinity term against its own group, so no two share a pod.

``workspaces=W`` (``--workspaces W``): W PersistentWorkspaces, Bound round-robin to the pods
(setup writes the status the binding controller would), and Run i uses workspace i mod W (a
cohort shares its workspace), so every Run goes through the Workspace filter's fencing.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import connection
from django.utils import timezone

from portal.auth.identities import LOCAL_OPERATOR
from portal.machinery import store
from portal.machinery.registry import registry
from portal.machinery.store import WriteContext
from scheduling import pod_writer, resources
from scheduling.models import Run, Runtime, RuntimePod
from workspaces.models import PersistentWorkspace, workspace_path

AFFINITY_MODES = ("none", "required", "preferred", "anti")
RUNTIME = "bench"
COHORT_SIZE = 10
PREFERRED_WEIGHT = 50
TOPOLOGY = "kruntimes.io/runtime-pod"
API_VERSION = "kruntimes.io/v1alpha1"
BULK_BATCH = 1000

Log = Callable[[str], None]


def _kind(group: str, version: str, plural: str):
    kind = registry.get(group, version, plural)
    if kind is None:
        raise RuntimeError(f"the {plural} kind is not registered")
    return kind


def _term(labels: dict) -> dict:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": TOPOLOGY}


def affinity_for(mode: str, labels: dict) -> dict:
    """The spec.affinity of a Run labelled ``labels`` in the given mode ({} for none)."""
    if mode == "required":
        return {"runAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(labels)]}}
    if mode == "preferred":
        return {
            "runAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": PREFERRED_WEIGHT, "runAffinityTerm": _term(labels)}
                ]
            }
        }
    if mode == "anti":
        return {
            "runAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [_term(labels)]}
        }
    return {}


@dataclass
class Workload:
    namespace: str
    runs: int
    pods: int
    affinity: str = "none"
    workspaces: int = 0
    _templates: dict[str, Run] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.affinity not in AFFINITY_MODES:
            raise ValueError(f"affinity must be one of {', '.join(AFFINITY_MODES)}")
        if self.runs < 1 or self.pods < 1:
            raise ValueError("--runs and --pods must be at least 1")
        if self.affinity == "anti" and self.pods < 2:
            raise ValueError("--affinity anti needs at least 2 pods")
        if self.workspaces < 0:
            raise ValueError("--workspaces must not be negative")
        if self.workspaces and self.affinity == "anti":
            raise ValueError("--workspaces fences a group onto one pod: not with --affinity anti")

    # --- shape ---------------------------------------------------------------------------

    @property
    def group_size(self) -> int:
        """Runs per cohort (required/preferred) or per spread group (anti); 1 for none."""
        if self.affinity in ("required", "preferred"):
            return COHORT_SIZE
        if self.affinity == "anti":
            # a group (plus the one probe Run that may join it) fits on distinct pods
            return max(1, min(COHORT_SIZE, self.pods // 2))
        return 1

    @property
    def groups(self) -> int:
        return math.ceil(self.runs / self.group_size)

    @property
    def capacity(self) -> int:
        """``runs`` capacity per pod: an even share (with workspaces: the Runs of the busiest
        pod's workspaces), plus a whole cohort/group of slack (a cohort lands on one pod),
        plus one for the probe Run measured afterwards."""
        if not self.workspaces:
            return math.ceil(self.runs / self.pods) + self.group_size + 1
        per_pod = [0] * self.pods
        for group in range(self.groups):
            members = min(self.group_size, self.runs - group * self.group_size)
            per_pod[self.pod_of_workspace(group % self.workspaces)] += members
        return max(per_pod) + self.group_size + 1

    def workspace_name(self, group: int) -> str:
        return f"ws-{group % self.workspaces:05d}" if self.workspaces else ""

    def pod_of_workspace(self, index: int) -> int:
        return index % self.pods

    def labels_of(self, group: int) -> dict[str, str]:
        labels = {"app": "bench"}
        if self.affinity in ("required", "preferred"):
            labels["cohort"] = f"c{group}"
        elif self.affinity == "anti":
            labels["spread"] = f"s{group}"
        return labels

    def manifest(self, name: str, group: int) -> dict:
        labels = self.labels_of(group)
        selected = {k: v for k, v in labels.items() if k != "app"}
        spec = {"runtime": RUNTIME, "source": {"inline": "true"}, "mode": {"task": {}}}
        affinity = affinity_for(self.affinity, selected)
        if affinity:
            spec["affinity"] = affinity
        if self.workspaces:
            spec["workspace"] = {"name": self.workspace_name(group)}
        return {
            "apiVersion": API_VERSION,
            "kind": "Run",
            "metadata": {"name": name, "labels": labels},
            "spec": spec,
        }

    # --- Runs ----------------------------------------------------------------------------

    def _template(self, group: int) -> Run:
        """The validated Run for a group's manifest: one store dry run per distinct manifest."""
        probe = self.manifest("template", group)
        key = json.dumps([probe["metadata"]["labels"], probe["spec"]], sort_keys=True)
        template = self._templates.get(key)
        if template is None:
            runs = _kind("kruntimes.io", "v1alpha1", "runs")
            template = store.create(
                runs,
                probe,
                namespace=self.namespace,
                context=WriteContext(user=LOCAL_OPERATOR, dry_run=True),
            )
            self._templates[key] = template
        return template

    def new_run(self, name: str, group: int, created: datetime) -> Run:
        """An unsaved pending Run cloned from its group's validated template."""
        template = self._template(group)
        run = Run(
            namespace=self.namespace,
            name=name,
            uid=uuid.uuid4(),
            labels=dict(template.labels),
            annotations=dict(template.annotations),
            finalizers=list(template.finalizers),
            owner_references=list(template.owner_references),
            spec=template.spec,
            status={},
            creation_timestamp=created,
        )
        run.sync_columns()
        return run

    @property
    def distinct_manifests(self) -> int:
        return len(self._templates)

    def group_of(self, index: int) -> int:
        return index // self.group_size

    def pending_runs(self, created: datetime) -> list[Run]:
        # distinct, increasing creation times: queue order is the index order
        return [
            self.new_run(f"bench-{i:06d}", self.group_of(i), created + timedelta(microseconds=i))
            for i in range(self.runs)
        ]

    def probe_run(self, index: int) -> Run:
        """The one new Run of a probe pass: it joins an existing cohort/group in turn."""
        group = (index * 7) % self.groups
        return self.new_run(f"probe-{index:05d}", group, timezone.now())


# --- the namespace ----------------------------------------------------------------------


def delete_namespace(namespace: str) -> None:
    """Remove a bench namespace's rows (Runs, Runtime Pods, Runtimes, the Namespace)."""
    from portal.models import Namespace, OwnerLink

    Run.objects.filter(namespace=namespace).delete()
    PersistentWorkspace.objects.filter(namespace=namespace).delete()
    pod_writer.delete_where(RuntimePod.objects.filter(namespace=namespace))
    Runtime.objects.filter(namespace=namespace).delete()
    OwnerLink.objects.filter(dependent_namespace=namespace).delete()
    Namespace.objects.filter(name=namespace).delete()


def vacuum(log: Log) -> None:
    """PostgreSQL: VACUUM ANALYZE the scheduler's tables between phases (untimed), so each
    phase starts from fresh planner statistics and no dead tuples left by the one before, as
    autovacuum would leave a live database. Skipped inside a transaction (tests) and on SQLite.
    """
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return
    started = time.perf_counter()
    with connection.cursor() as cursor:
        for model in (Run, RuntimePod):
            cursor.execute(f"VACUUM ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
    log(f"vacuum analyze: {time.perf_counter() - started:.2f} s")


def refresh_heartbeats(namespace: str) -> None:
    """What runtimed's heartbeats do in a live cluster: keep the pods fresh."""
    pod_writer.update_where(
        RuntimePod.objects.filter(namespace=namespace), last_heartbeat=timezone.now()
    )


# the benchmark is a management command: it writes as the local operator
OPERATOR = WriteContext(user=LOCAL_OPERATOR)


def create(workload: Workload, log: Log) -> None:
    """A fresh namespace with the Runtime, its pods and every pending Run."""
    namespace = workload.namespace
    delete_namespace(namespace)
    store.create(
        _kind("", "v1", "namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        context=OPERATOR,
    )
    runtime = store.create(
        _kind("kruntimes.io", "v1alpha1", "runtimes"),
        {
            "apiVersion": API_VERSION,
            "kind": "Runtime",
            "metadata": {"name": RUNTIME},
            "spec": {
                "template": {"spec": {"containers": [{"name": "runtime", "image": "bench"}]}},
                "capacity": {"resources": {"runs": workload.capacity}},
            },
        },
        namespace=namespace,
        context=OPERATOR,
    )
    capacity = resources.pod_capacity(runtime.spec, {})
    now = timezone.now()
    pod_writer.create_many(
        [
            RuntimePod(
                namespace=namespace,
                runtime=RUNTIME,
                name=f"{RUNTIME}-{i:05d}",
                uid=uuid.uuid4(),
                ready=True,
                phase="Running",
                last_heartbeat=now,
                capacity=capacity,
            )
            for i in range(workload.pods)
        ]
    )
    log(f"namespace {namespace}: {workload.pods} pods with capacity {capacity}")
    if workload.workspaces:
        bind_workspaces(workload, log)
    runs = workload.pending_runs(now)
    log(f"validated {workload.distinct_manifests} distinct Run manifest(s) through the store")
    Run.objects.bulk_create(runs, batch_size=BULK_BATCH)
    log(
        f"created {len(runs)} pending Runs (affinity {workload.affinity}, "
        f"{workload.groups} group(s) of {workload.group_size})"
    )
    vacuum(log)


def bind_workspaces(workload: Workload, log: Log) -> None:
    """W workspaces through the store, then Bound round-robin as the binding controller would
    write them (setup, untimed: the bench measures the scheduler, not the binding)."""
    kind = _kind("kruntimes.io", "v1alpha1", "persistentworkspaces")
    pods = list(
        RuntimePod.objects.filter(namespace=workload.namespace)
        .order_by("name")
        .values("name", "uid")
    )
    for index in range(workload.workspaces):
        name = workload.workspace_name(index)
        ws = store.create(
            kind,
            {
                "apiVersion": API_VERSION,
                "kind": "PersistentWorkspace",
                "metadata": {"name": name},
                "spec": {"runtime": RUNTIME},
            },
            namespace=workload.namespace,
            context=OPERATOR,
        )
        pod = pods[workload.pod_of_workspace(index)]
        status = {
            "phase": "Bound",
            "runtime": RUNTIME,
            "boundPod": pod["name"],
            "boundPodUID": str(pod["uid"]),
            "path": workspace_path(name),
        }
        PersistentWorkspace.objects.filter(pk=ws.pk).update(
            status=status, **PersistentWorkspace.status_columns(status)
        )
    log(f"{workload.workspaces} workspaces bound round-robin to {len(pods)} pods")
