"""``manage.py run-job -f job.yaml --dry-run``: what a Job would do on its Kubernetes class,
printed instead of done. The Job is accepted as the Job controller would accept it (class
resolution, namespace, resources, env) without being stored, and the execution driver runs
against a cluster that only prints: the batch Job manifest, then every call (list leftovers,
create, wait for the pod, each exec with its argv, the outputs copy, delete). Nothing is
written and no request leaves the process.
"""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path
from typing import Any, TextIO

from django.utils import timezone

from . import adapters, env, job_controller, parameters
from . import status as job_status
from .adapters.base import ExecutionRequest
from .adapters.kubernetes import driver_spec
from .kubeexec import DryRunCluster
from .kubeexec.driver import Driver
from .localexec.layout import ExecutionDir
from .models import Job


class DryRunRefused(Exception):
    """The Job would not run (not accepted, not a Kubernetes class): the message says why."""


def request_for(manifest: dict[str, Any], namespace: str) -> ExecutionRequest:
    meta = manifest.get("metadata") or {}
    job = Job(
        namespace=meta.get("namespace") or namespace,
        name=meta.get("name") or "job",
        uid=uuid.uuid4(),
        generation=1,
        spec=manifest.get("spec") or {},
    )
    job.sync_columns()
    status = job_controller.accept(job, {}, timezone.now())
    accepted = job_status.condition(status, "Accepted")
    if accepted.get("status") != "True":
        raise DryRunRefused(
            f"the Job would not be accepted: {accepted.get('reason')}: "
            f"{accepted.get('message', '')}"
        )
    resolved = status["resolvedJobClass"]
    if resolved["controllerName"] != adapters.KUBERNETES:
        raise DryRunRefused(
            f"JobClass {resolved['name']} is {resolved['controllerName']}: the dry run shows "
            f"Kubernetes Jobs ({adapters.KUBERNETES}) only"
        )
    params = parameters.lookup(resolved["parametersRef"])
    assert params is not None  # accept found it
    return ExecutionRequest(
        namespace=job.namespace,
        name=job.name,
        uid=str(job.uid),
        spec=job.spec,
        parameters=params.spec or {},
        parameters_name=params.name,
        env=env.resolve(job.namespace, job.spec.get("env")),
        effective_resources=status.get("effectiveResources") or {},
        masked=tuple(env.secret_values(job.namespace, job.spec.get("env"))),
    )


def print_dry_run(manifest: dict[str, Any], namespace: str, out: TextIO) -> dict[str, Any]:
    """Print the plan of the Job's execution; returns the result the driver recorded."""
    spec = driver_spec(request_for(manifest, namespace), dry=True)
    with tempfile.TemporaryDirectory(prefix="kruntimes-dry-run-") as tmp:
        directory = ExecutionDir(Path(tmp))
        with open(directory.log, "a", encoding="utf-8") as log:
            Driver(directory, DryRunCluster(log), spec).run()
        out.write(directory.log.read_text(encoding="utf-8"))
        recorded = json.loads(directory.result.read_text(encoding="utf-8"))
    out.write(json.dumps(recorded, indent=2) + "\n")
    return recorded
