"""The engine of the Kubernetes execution adapter (seed 004): one batch/v1 Job per Job.

A detached driver process (``python -m jobclasses.kubeexec.driver``) drives one execution
from its directory, under the same claim, lock, result and log files as the local engine
(``jobclasses.localexec``), so a restarted controller observes, cancels and deletes it by its
ref alone: it creates the batch Job with a long-lived pod, waits for the pod to be Ready,
streams the checkout into ``/work`` by tar over exec, runs one ``sh -ec <run>`` exec per step
in that pod (detached from the exec, so it outlives a lost driver), streams ``/outputs``
back and records ``result.json``; the record that outlives the driver's directory is on the
batch Job and in its pod (``record``), and the adapter deletes the batch Job once it has
observed the result.

It imports no Django app: the ``kubernetes`` client configuration comes from ``portal.kube``.
"""

from .cluster import ApiCluster, Call, Cluster, DryRunCluster, ExecResult
from .manifest import (
    EXECUTION_LABEL,
    JOB_NAME_LABEL,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    OUTPUTS_DIR,
    OWNER_ANNOTATION,
    RECORD_ANNOTATION,
    STEPS_DIR,
    WORK_DIR,
    batch_job_name,
    env_secret,
    execution_selector,
    job_manifest,
    leftover_selector,
)

__all__ = [
    "EXECUTION_LABEL",
    "JOB_NAME_LABEL",
    "MANAGED_BY",
    "MANAGED_BY_LABEL",
    "OUTPUTS_DIR",
    "OWNER_ANNOTATION",
    "RECORD_ANNOTATION",
    "STEPS_DIR",
    "WORK_DIR",
    "ApiCluster",
    "Call",
    "Cluster",
    "DryRunCluster",
    "ExecResult",
    "batch_job_name",
    "env_secret",
    "execution_selector",
    "job_manifest",
    "leftover_selector",
]
