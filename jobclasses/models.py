"""JobClass, its adapters' parameter kinds, and Job (seed 003, API.md).

A JobClass is a cluster-scoped execution service class (``default``, ``rootless``,
``microvm``): the controller that owns it, one reference to that controller's own
cluster-scoped parameters object, the namespaces allowed to use it and a resource policy. A
Job is the namespaced unit of isolated work the class runs.

Fields the controllers and the admin query are indexed columns kept in step with spec/status
by ``sync_columns``; nested structures stay JSON validated by ``jobclasses.serializers``.
"""

from __future__ import annotations

from django.db import models

from portal.machinery.conditions import get_condition
from portal.machinery.objects import ClusterObject, NamespacedObject, unique_name_constraint

GROUP = "execution.ayatori.ddupan.top"
VERSION = "v1alpha1"
DEFAULT_CLASS_ANNOTATION = f"{GROUP}/is-default-job-class"
NAMESPACE_DEFAULT_ANNOTATION = f"{GROUP}/default-job-class"
# Held by a JobClass while a non-terminal Job references its UID.
CLASS_PROTECTION = f"{GROUP}/job-class-protection"
# Held by a parameters object while a JobClass references it.
PARAMETERS_PROTECTION = f"{GROUP}/parameters-protection"
# Held by a Job until its adapter deleted the execution (its executionRef).
EXECUTION_CLEANUP = f"{GROUP}/execution-cleanup"


class JobPhase(models.TextChoices):
    PENDING = "Pending"  # not accepted yet, or accepted and waiting for the class to be Ready
    SCHEDULED = "Scheduled"  # the adapter created the execution (executionRef persisted)
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"  # ResultUnknown: cannot be observed safely; never re-run elsewhere


TERMINAL_JOB_PHASES = (JobPhase.SUCCEEDED, JobPhase.FAILED)


def condition_status(status: dict, ctype: str) -> str:
    condition = get_condition((status or {}).get("conditions"), ctype) or {}
    return str(condition.get("status", ""))


class JobClass(ClusterObject):
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)
    controller_name = models.CharField(max_length=253, db_index=True, editable=False, default="")
    parameters_kind = models.CharField(max_length=63, editable=False, default="")
    parameters_name = models.CharField(max_length=253, db_index=True, editable=False, default="")
    is_default = models.BooleanField(default=False, db_index=True, editable=False)
    accepted = models.CharField(max_length=8, editable=False, default="")
    ready = models.CharField(max_length=8, editable=False, default="")

    class Meta(ClusterObject.Meta):
        constraints = [unique_name_constraint("jobclass", namespaced=False)]
        verbose_name_plural = "job classes"

    @staticmethod
    def status_columns(status: dict) -> dict:
        return {
            "accepted": condition_status(status, "Accepted"),
            "ready": condition_status(status, "Ready"),
        }

    def sync_columns(self) -> None:
        spec = self.spec or {}
        ref = spec.get("parametersRef") or {}
        self.controller_name = spec.get("controllerName", "") or ""
        self.parameters_kind = ref.get("kind", "") or ""
        self.parameters_name = ref.get("name", "") or ""
        self.is_default = (self.annotations or {}).get(DEFAULT_CLASS_ANNOTATION) == "true"
        for column, value in self.status_columns(self.status).items():
            setattr(self, column, value)


class ExecutionParameters(ClusterObject):
    """An adapter's own cluster-scoped parameters object (one concrete model per kind)."""

    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)

    class Meta(ClusterObject.Meta):
        abstract = True


class KubernetesExecutionParameters(ExecutionParameters):
    class Meta(ExecutionParameters.Meta):
        constraints = [unique_name_constraint("kubernetesexecutionparameters", namespaced=False)]
        verbose_name = "Kubernetes execution parameters"
        verbose_name_plural = "Kubernetes execution parameters"


class OpenSandboxExecutionParameters(ExecutionParameters):
    class Meta(ExecutionParameters.Meta):
        constraints = [unique_name_constraint("opensandboxexecutionparameters", namespaced=False)]
        verbose_name = "OpenSandbox execution parameters"
        verbose_name_plural = "OpenSandbox execution parameters"


class LocalExecutionParameters(ExecutionParameters):
    class Meta(ExecutionParameters.Meta):
        constraints = [unique_name_constraint("localexecutionparameters", namespaced=False)]
        verbose_name = "local execution parameters"
        verbose_name_plural = "local execution parameters"


class Job(NamespacedObject):
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)
    phase = models.CharField(
        max_length=16,
        choices=JobPhase.choices,
        default=JobPhase.PENDING,
        db_index=True,
        editable=False,
    )
    # spec.jobClassName as asked ("" when the default is to be resolved)
    requested_class = models.CharField(max_length=253, blank=True, default="", editable=False)
    # status.resolvedJobClass: frozen once resolved
    job_class = models.CharField(
        max_length=253, blank=True, default="", db_index=True, editable=False
    )
    job_class_uid = models.CharField(
        max_length=36, blank=True, default="", db_index=True, editable=False
    )
    controller_name = models.CharField(max_length=253, blank=True, default="", editable=False)
    cancel_requested = models.BooleanField(default=False, editable=False)

    class Meta(NamespacedObject.Meta):
        constraints = [unique_name_constraint("job", namespaced=True)]

    @staticmethod
    def status_columns(status: dict) -> dict:
        status = status or {}
        resolved = status.get("resolvedJobClass") or {}
        return {
            "phase": status.get("phase") or JobPhase.PENDING,
            "job_class": resolved.get("name", "") or "",
            "job_class_uid": resolved.get("uid", "") or "",
            "controller_name": resolved.get("controllerName", "") or "",
        }

    def sync_columns(self) -> None:
        spec = self.spec or {}
        self.requested_class = spec.get("jobClassName", "") or ""
        self.cancel_requested = bool(spec.get("cancelRequested"))
        for column, value in self.status_columns(self.status).items():
            setattr(self, column, value)

    @property
    def is_finished(self) -> bool:
        return self.phase in TERMINAL_JOB_PHASES
