"""The ``local`` provider: each Runtime Pod is a runtimed worker process on this machine.

``manage.py up`` keeps ``spec.replicas`` pods per Runtime, named ``<runtime>-<ordinal>`` as a
StatefulSet's. A pod has a UID and its own directory under the data dir (its workspace and
the PersistentWorkspaces bound to it).

- A pod whose process dies while ``up`` runs comes back as a NEW pod (same name, new UID, a
  fresh directory): Runs bound to the old one end PodGone, its workspaces turn Lost.
- A graceful stop of ``up`` keeps each pod (row, UID, directory), as a StatefulSet pod's
  volume outlives a node restart: its runtimed drains, Runs it had started and not finished
  end PodTerminating, and the next ``up`` starts it again, the next ``incarnation``, which
  takes over its queue (the Runs it had not started) and its bound workspaces.
- A ``up`` killed outright leaves its pods' runtimed running: the next ``up`` finds them by
  their UID, drains them (SIGTERM, then SIGKILL after the grace) and keeps the pods the same.
- Each start bumps the row's ``incarnation`` and hands it to runtimed: heartbeats carry it,
  and one of another incarnation (queued before a restart) is refused (``pods``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from portal.processes import Child, Supervisor
from runtimed import proctree, protocol
from scheduling import dataplane, dispatch, lifecycle, pod_writer, recovery, resources
from scheduling.models import (
    LOCAL_PROVIDER,
    PodPhase,
    RunPhase,
    Runtime,
    RuntimePod,
    runtimes_with_pods,
)
from scheduling.providers import pod_secrets, rows, runtime_server

log = logging.getLogger(__name__)
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@dataclass
class PodIdentity:
    namespace: str
    runtime: str
    name: str
    uid: str
    incarnation: int = 0

    @property
    def directory(self) -> Path:
        """The pod's own directory: its emptyDir workspace and its Secret volume."""
        return Path(settings.DATA_DIR) / "pods" / self.namespace / self.name

    @property
    def workspace(self) -> Path:
        return self.directory / "workspace"

    @property
    def secrets(self) -> Path:
        return self.directory / "secrets"


def new_identity(namespace: str, runtime: str) -> PodIdentity:
    """A pod of a generated name (``manage.py runtimed``: one by hand, beside ``up``'s)."""
    suffix = "".join(secrets.choice(SUFFIX_ALPHABET) for _ in range(5))
    return PodIdentity(namespace, runtime, f"{runtime}-{suffix}", str(uuid.uuid4()))


def ordinal_name(runtime: str, index: int) -> str:
    return f"{runtime}-{index}"


def identity_for(namespace: str, runtime: str, index: int) -> PodIdentity:
    """Who the pod ``<runtime>-<index>`` is at its start: the pod a stop of ``up`` kept (its
    row and directory still there), or a new one (a new UID) in place of a dead one."""
    name = ordinal_name(runtime, index)
    row = RuntimePod.objects.filter(namespace=namespace, name=name).first()
    if row is not None:
        kept = PodIdentity(namespace, row.runtime, name, str(row.uid), row.incarnation)
        if row.provider == LOCAL_PROVIDER and row.runtime == runtime and kept.workspace.is_dir():
            return kept
        unregister(kept)  # its disk is gone (or it was something else): the pod is gone
    return PodIdentity(namespace, runtime, name, str(uuid.uuid4()))


def broker_env() -> dict[str, str]:
    env = {"CELERY_BROKER_URL": settings.CELERY_BROKER_URL}
    if settings.CELERY_BROKER_URL.startswith("filesystem://"):
        env["KRUNTIMES_BROKER_DIR"] = str(settings.BROKER_DIR)
    return env


def runtimed_grace() -> float:
    return max(1.0, settings.KRUNTIMES_POD_TERMINATION_GRACE_SECONDS - 5.0)


def pod_env(pod: PodIdentity, capacity: dict[str, int]) -> dict[str, str]:
    import json

    env = {
        **broker_env(),
        "KRUNTIME_POD_NAME": pod.name,
        "KRUNTIME_POD_UID": pod.uid,
        "KRUNTIME_POD_INCARNATION": str(pod.incarnation),
        "KRUNTIME_POD_NAMESPACE": pod.namespace,
        "KRUNTIME_RUNTIME": pod.runtime,
        "KRUNTIME_WORKSPACE": str(pod.workspace),
        "KRUNTIME_CAPACITY": json.dumps(capacity),
        # every local pod sees the same artifact volumes: the shared-PVC stand-in
        "KRUNTIME_ARTIFACT_VOLUMES": str(settings.KRUNTIMES_ARTIFACT_VOLUMES),
        "KRUNTIME_ARTIFACT_MAX_BYTES": str(settings.KRUNTIMES_ARTIFACT_MAX_BYTES),
        "KRUNTIME_RUN_ARTIFACT_MAX_BYTES": str(settings.KRUNTIMES_RUN_ARTIFACT_MAX_BYTES),
        # steps get the pod's grace less a margin to report before the pod is killed
        "KRUNTIME_TERMINATION_GRACE_SECONDS": str(runtimed_grace()),
        # the Secrets its Runtime references, written there by register()
        "KRUNTIME_SECRETS_DIR": str(pod.secrets),
        # the pod's Runtime Server: the template's runtime container (built-in or a command)
        **runtime_server.server_env(runtime_spec(pod)),
        # where the function gateway reaches this pod (runtimed.dataplane), and its key
        "KRUNTIME_DATAPLANE_ADDRESS": dataplane_address(pod.uid),
        "KRUNTIME_DATAPLANE_KEY": dataplane.key(pod.namespace),
    }
    return env


def dataplane_address(pod_uid: str) -> str:
    """A pod-local unix socket: short enough for sun_path wherever the data directory is."""
    return f"unix:{tempfile.gettempdir()}/krt-dp-{pod_uid}.sock"


def runtime_spec(pod: PodIdentity) -> dict[str, Any]:
    spec = (
        Runtime.objects.filter(namespace=pod.namespace, name=pod.runtime)
        .values_list("spec", flat=True)
        .first()
    )
    return spec or {}


def register(pod: PodIdentity) -> dict[str, int]:
    """Create the RuntimePod row, or start a kept pod's next incarnation on its row (not
    ready until runtimed's first heartbeat); ``pod.incarnation`` is then the one starting."""
    spec = runtime_spec(pod)
    capacity = resources.pod_capacity(spec, {})
    pod.workspace.mkdir(parents=True, exist_ok=True)
    pod_secrets.write_secrets(pod.secrets, pod.namespace, pod_secrets.referenced_secrets(spec))
    with transaction.atomic():
        row = (
            RuntimePod.objects.select_for_update()
            .filter(namespace=pod.namespace, name=pod.name, uid=pod.uid)
            .first()
        )
        if row is None:
            pod.incarnation = 1
            pod_writer.create(
                namespace=pod.namespace,
                runtime=pod.runtime,
                name=pod.name,
                uid=pod.uid,
                provider="local",
                phase=PodPhase.PENDING,
                ready=False,
                capacity=capacity,
                workspace_path=str(pod.workspace),
                incarnation=pod.incarnation,
            )
        else:
            pod.incarnation = row.incarnation + 1
            pod_writer.update(
                row,
                phase=PodPhase.PENDING,
                ready=False,
                pid=None,
                capacity=capacity,
                workspace_path=str(pod.workspace),
                incarnation=pod.incarnation,
            )
            dispatch.hand_over(pod.namespace, pod.name, pod.uid, timezone.now())
    return capacity


def kill_leftover_steps(pod: PodIdentity, workspace: Path | None = None) -> int:
    """A pod's processes die with it: kill step process groups a dead runtimed left behind
    (runtimed names each running step's group in ``attempt-<n>.pgid``, in the Run's directory
    under the pod's workspace or under one of its persistent workspaces)."""
    killed = proctree.kill_pod_leftovers(pod.uid)  # also what left its process group
    roots = protocol.run_roots(workspace or pod.workspace)
    for pgid_file in (
        f for root in roots for f in (root / protocol.RUNS_DIR).glob("*/attempt-*.pgid")
    ):
        try:
            os.killpg(int(pgid_file.read_text()), signal.SIGKILL)
            killed += 1
        except (OSError, ValueError):
            pass  # already gone
    return killed


def mark_terminating(pod: PodIdentity) -> None:
    """The pod is being stopped on purpose: nothing new lands on it, Runs end PodTerminating."""
    pod_writer.update_where(
        RuntimePod.objects.filter(namespace=pod.namespace, name=pod.name, uid=pod.uid),
        phase=PodPhase.TERMINATING,
        ready=False,
    )


def unregister(pod: PodIdentity) -> None:
    """The pod is gone: its processes, its Runs, its row and its emptyDir. What its runtimed
    recorded on disk is applied first: only Runs whose outcome is unknown end as lost."""
    kill_leftover_steps(pod)
    recovery.recover(pod.workspace)
    rows.end_pod(pod.namespace, pod.name, pod.uid, timezone.now())
    pod_secrets.remove_secrets(pod.secrets)
    shutil.rmtree(pod.directory, ignore_errors=True)


def keep(pod: PodIdentity) -> None:
    """``up`` stops: the pod is kept for the next one, as it is on disk (its workspace, its
    bound PersistentWorkspaces, its queue). What its runtimed recorded is applied; Runs it
    had started and not finished end PodTerminating (their steps are gone); Runs it had not
    started stay bound to it. Not ready, and at a new incarnation: no heartbeat of the process
    that stopped is heard again."""
    kill_leftover_steps(pod)
    recovery.recover(pod.workspace)
    lifecycle.fail_runs_on_pod(
        pod.namespace,
        pod.name,
        pod.uid,
        protocol.Reason.POD_TERMINATING,
        "the Runtime Pod was stopped (manage.py up stopped) while this Run executed",
        timezone.now(),
        phases=(RunPhase.RUNNING, RunPhase.READY),
    )
    with transaction.atomic():
        row = (
            RuntimePod.objects.select_for_update()
            .filter(namespace=pod.namespace, name=pod.name, uid=pod.uid)
            .first()
        )
        if row is not None:
            pod_writer.update(
                row,
                phase=PodPhase.PENDING,
                ready=False,
                pid=None,
                active_runs=[],
                incarnation=row.incarnation + 1,
            )
    pod_secrets.remove_secrets(pod.secrets)


def drain_orphans(pods: list[PodIdentity], grace: float) -> int:
    """Stop the pods' runtimed left running by an ``up`` killed outright: SIGTERM (each drains
    as at any stop), SIGKILL what is left after ``grace``. Returns how many there were."""

    def alive() -> dict[int, PodIdentity]:
        return {pid: pod for pod in pods for pid in proctree.pod_daemons(pod.uid)}

    orphans = alive()
    for pid, pod in orphans.items():
        log.warning("draining runtimed %d of Runtime Pod %s left by an earlier up", pid, pod.name)
        _signal(pid, signal.SIGTERM)
    count, deadline = len(orphans), time.monotonic() + grace
    while orphans and time.monotonic() < deadline:
        time.sleep(0.2)
        orphans = alive()
    for pid, pod in orphans.items():
        log.warning("runtimed %d of Runtime Pod %s did not stop in time; killing it", pid, pod.name)
        _signal(pid, signal.SIGKILL)
    return count


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signum)


def runtimed_argv() -> list[str]:
    return [sys.executable, "-m", "runtimed"]


class LocalProvider:
    """Keeps ``replicas`` runtimed children per Runtime in a Supervisor. With ``keep_on_stop``
    (``manage.py up``) a stop of the whole supervisor keeps the pods for the next start."""

    def __init__(self, supervisor: Supervisor, *, keep_on_stop: bool = False) -> None:
        self.supervisor = supervisor
        self.keep_on_stop = keep_on_stop
        self.pods: dict[str, PodIdentity | None] = {}  # child name -> current incarnation

    def child(self, namespace: str, runtime: str, index: int) -> Child:
        name = f"pod:{namespace}/{runtime}#{index}"
        self.pods[name] = None

        def prepare(child: Child) -> None:
            pod = identity_for(namespace, runtime, index)
            capacity = register(pod)
            self.pods[name] = pod
            child.env = pod_env(pod, capacity)

        def on_exit(child: Child) -> None:
            pod = self.pods.get(name)
            if pod is None:
                return
            if self.keep_on_stop and self.supervisor.shutting_down:
                keep(pod)
            else:
                unregister(pod)
            self.pods[name] = None

        return Child(name, runtimed_argv(), prepare=prepare, on_exit=on_exit)

    def desired(self) -> set[tuple[str, str, int]]:
        rows = runtimes_with_pods().values_list("namespace", "name", "replicas")
        return {(ns, name, i) for ns, name, replicas in rows for i in range(replicas)}

    def sync(self) -> None:
        wanted = {f"pod:{ns}/{rt}#{i}": (ns, rt, i) for ns, rt, i in self.desired()}
        for name, (ns, rt, i) in sorted(wanted.items()):
            if name not in self.pods:
                log.info("starting Runtime Pod for %s/%s (#%d)", ns, rt, i)
                self.supervisor.add(self.child(ns, rt, i))
        for name in sorted(set(self.pods) - set(wanted)):
            log.info("stopping %s", name)
            pod = self.pods.get(name)
            if pod is not None:
                mark_terminating(pod)
            self.supervisor.remove(name)
            self.pods.pop(name, None)

    def cleanup_orphans(self) -> int:
        """What an earlier run of ``up`` left: its pods' runtimed still running (it was killed
        outright) are drained; what they recorded is applied. A pod ``sync`` will want again
        is kept for it (``keep``); any other ends, its Runs failed and its disk removed.
        Returns how many pods were ended."""
        wanted = {(ns, ordinal_name(rt, i)) for ns, rt, i in self.desired()}
        pods_root = (Path(settings.DATA_DIR) / "pods").resolve()
        ended = 0
        rows = list(RuntimePod.objects.filter(provider=LOCAL_PROVIDER))
        pods = [
            PodIdentity(row.namespace, row.runtime, row.name, str(row.uid), row.incarnation)
            for row in rows
        ]
        drain_orphans(pods, runtimed_grace() + 5.0)
        for row, pod in zip(rows, pods, strict=True):
            workspace = Path(row.workspace_path) if row.workspace_path else None
            # the disk it reports (resolved by runtimed) must be the one its name gives
            same_disk = workspace is not None and workspace.resolve() == pod.workspace.resolve()
            if (row.namespace, row.name) in wanted and same_disk and pod.workspace.is_dir():
                keep(pod)
                continue
            if workspace is not None:
                kill_leftover_steps(pod, workspace)
                recovery.recover(workspace)
            lifecycle.fail_runs_on_pod(
                row.namespace,
                row.name,
                str(row.uid),
                protocol.Reason.POD_GONE,
                "the Runtime Pod this Run was bound to is gone (the portal was restarted)",
                timezone.now(),
            )
            pod_writer.delete_where(RuntimePod.objects.filter(pk=row.pk))
            if workspace is not None and workspace.resolve().is_relative_to(pods_root):
                shutil.rmtree(workspace.parent, ignore_errors=True)
            ended += 1
        return ended
