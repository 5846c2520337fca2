"""Workflow, WorkflowRun and Action (seed 002, API.md): a Workflow is a template of jobs; a
WorkflowRun freezes a copy of its jobs with the inputs resolved and is what the controller runs,
each step as a child Run; an Action is a reusable list of run steps.

Fields the controller and the admin query (phase, the workflow a run came from) are indexed
columns kept in step with spec/status by ``sync_columns``; the rest stays JSON.
"""

from __future__ import annotations

from django.db import models

from portal.machinery.objects import NamespacedObject, unique_name_constraint


class WorkflowRunPhase(models.TextChoices):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    CANCELLED = "Cancelled"


class JobPhase(models.TextChoices):
    PENDING = "Pending"  # not started: its needs have not all succeeded yet
    WAITING = "Waiting"  # started, waiting on something outside it (its workspace, a pod)
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    SKIPPED = "Skipped"  # a job it needs failed (or the run was cancelled before it started)


class StepPhase(models.TextChoices):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


# a job status a rerun of failed jobs only took from the run it reruns (workflows.reruns)
CARRIED_REASON = "CarriedOver"

FINISHED_RUN_PHASES = (
    WorkflowRunPhase.SUCCEEDED,
    WorkflowRunPhase.FAILED,
    WorkflowRunPhase.CANCELLED,
)


class Workflow(NamespacedObject):
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)

    class Meta(NamespacedObject.Meta):
        constraints = [unique_name_constraint("workflow", namespaced=True)]


class Action(NamespacedObject):
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)

    class Meta(NamespacedObject.Meta):
        constraints = [unique_name_constraint("action", namespaced=True)]


class WorkflowRun(NamespacedObject):
    spec = models.JSONField(default=dict)
    status = models.JSONField(default=dict, blank=True)
    phase = models.CharField(
        max_length=16,
        choices=WorkflowRunPhase.choices,
        default=WorkflowRunPhase.PENDING,
        db_index=True,
        editable=False,
    )
    # spec.workflowRef.name: the Workflow it was started from ("" for an inline one)
    workflow = models.CharField(
        max_length=253, blank=True, default="", db_index=True, editable=False
    )
    cancel_requested = models.BooleanField(default=False, editable=False)

    class Meta(NamespacedObject.Meta):
        constraints = [unique_name_constraint("workflowrun", namespaced=True)]

    @staticmethod
    def status_columns(status: dict) -> dict:
        return {"phase": (status or {}).get("phase") or WorkflowRunPhase.PENDING}

    def sync_columns(self) -> None:
        spec = self.spec or {}
        self.workflow = ((spec.get("workflowRef") or {}).get("name")) or ""
        self.cancel_requested = bool(spec.get("cancelRequested"))
        for column, value in self.status_columns(self.status).items():
            setattr(self, column, value)

    @property
    def is_finished(self) -> bool:
        return self.phase in FINISHED_RUN_PHASES
