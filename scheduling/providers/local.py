"""The ``local`` provider: each Runtime Pod is a runtimed worker process on this machine.

``manage.py up`` keeps ``spec.replicas`` pods per Runtime. A pod has a generated name and
UID and its own workspace directory (an emptyDir: removed with the pod). A pod that dies
comes back as a NEW pod (new name and UID), so Runs bound to the old one end PodGone.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import signal
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from portal.processes import Child, Supervisor
from runtimed import proctree, protocol
from scheduling import lifecycle, pod_writer, recovery, resources
from scheduling.models import PodPhase, Runtime, RuntimePod, runtimes_with_pods
from scheduling.providers import pod_secrets, rows

log = logging.getLogger(__name__)
SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


@dataclass
class PodIdentity:
    namespace: str
    runtime: str
    name: str
    uid: str

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
    suffix = "".join(secrets.choice(SUFFIX_ALPHABET) for _ in range(5))
    return PodIdentity(namespace, runtime, f"{runtime}-{suffix}", str(uuid.uuid4()))


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
    }
    return env


def register(pod: PodIdentity) -> dict[str, int]:
    """Create the RuntimePod row (not ready until runtimed's first heartbeat)."""
    spec = (
        Runtime.objects.filter(namespace=pod.namespace, name=pod.runtime)
        .values_list("spec", flat=True)
        .first()
        or {}
    )
    capacity = resources.pod_capacity(spec, {})
    pod.workspace.mkdir(parents=True, exist_ok=True)
    pod_secrets.write_secrets(pod.secrets, pod.namespace, pod_secrets.referenced_secrets(spec))
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
    )
    return capacity


def kill_leftover_steps(pod: PodIdentity, workspace: Path | None = None) -> int:
    """A pod's processes die with it: kill step process groups a dead runtimed left behind
    (runtimed names each running step's group in ``attempt-<n>.pgid``, in the Run's directory
    under the pod's workspace or under one of its persistent workspaces)."""
    killed = proctree.kill_pod_leftovers(pod.name)  # also what left its process group
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


def runtimed_argv() -> list[str]:
    return [sys.executable, "-m", "runtimed"]


class LocalProvider:
    """Keeps ``replicas`` runtimed children per Runtime in a Supervisor."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor
        self.pods: dict[str, PodIdentity | None] = {}  # child name -> current incarnation

    def child(self, namespace: str, runtime: str, index: int) -> Child:
        name = f"pod:{namespace}/{runtime}#{index}"
        self.pods[name] = None

        def prepare(child: Child) -> None:
            pod = new_identity(namespace, runtime)
            capacity = register(pod)
            self.pods[name] = pod
            child.env = pod_env(pod, capacity)

        def on_exit(child: Child) -> None:
            pod = self.pods.get(name)
            if pod is not None:
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
        """Local pods from an earlier run of ``up`` are gone: apply what their runtimed
        recorded, fail the Runs still waiting on them, and drop their rows and disks."""
        rows = list(RuntimePod.objects.filter(provider="local"))
        pods_root = (Path(settings.DATA_DIR) / "pods").resolve()
        for row in rows:
            workspace = Path(row.workspace_path) if row.workspace_path else None
            if workspace is not None:
                kill_leftover_steps(
                    PodIdentity(row.namespace, row.runtime, row.name, str(row.uid)), workspace
                )
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
        return len(rows)
