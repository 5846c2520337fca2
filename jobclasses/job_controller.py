"""The Job controller (seed 003, "Condition 与 Job 状态机交互"): level-triggered, one Job at a
time, plain functions over the stored objects.

A Job moves Accepted -> Scheduled -> Running -> Succeeded | Failed:

- **Accepted** once, and never re-evaluated: the class is resolved (``resolution``) and frozen
  in ``status.resolvedJobClass`` with its UID (and its parameters' UID); the class is Accepted;
  the namespace's labels match ``allowedNamespaces``; the resources resolve within the policy
  (``resources``), frozen in ``status.effectiveResources``; the env's Secret/ConfigMap keys
  resolve with ``optional`` semantics. A class or parameters object re-created under the same
  name (a new UID) never captures the Job.
- **Scheduled** only while the class is Ready: a not-Ready class keeps the Job Accepted=True,
  Scheduled=False. The adapter's ``executionRef`` is persisted *before* the adapter creates the
  execution, so a restarted controller finds it instead of starting another.
- From then on the Job is observed through its adapter, chosen by the frozen
  ``resolvedJobClass.controllerName`` alone: observe, cancel and delete keep working when the
  class is not Ready or gone. An execution that cannot be observed safely is the non-terminal
  ``ResultUnknown``: it is never run again on another class.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from portal.auth.identities import register_controller
from portal.machinery import store
from portal.machinery.admission import WriteContext
from portal.machinery.conditions import format_time
from portal.machinery.errors import StatusError
from portal.machinery.labels import compile_selector
from portal.machinery.registry import registry

from . import adapters, env, job_events, metrics, parameters, resolution
from . import status as job_status
from .adapters import BackendError, ExecutionRequest, NotReadyToStart, Observation
from .models import EXECUTION_CLEANUP, Job, JobClass, JobPhase
from .resources import effective_resources

log = logging.getLogger(__name__)

JOB_CONTROLLER = WriteContext(
    user=register_controller(
        "job-controller",
        [
            {
                "apiGroups": ["execution.ayatori.ddupan.top"],
                "resources": ["jobs"],
                "verbs": ["get", "list", "patch"],
            }
        ],
    )
)

# Accepted=False reasons (besides resolution's NoDefaultJobClass, AmbiguousDefaultJobClass,
# JobClassNotFound and JobClassTerminating)
CLASS_REPLACED = "JobClassReplaced"
CLASS_NOT_ACCEPTED = "JobClassNotAccepted"
PARAMETERS_NOT_FOUND = "ParametersNotFound"
PARAMETERS_REPLACED = "ParametersReplaced"
NAMESPACE_NOT_ALLOWED = "NamespaceNotAllowed"
INVALID_RESOURCES = "InvalidResources"
REFERENCE_NOT_FOUND = "ReferenceNotFound"
# Scheduled=False reasons
CLASS_NOT_READY = "JobClassNotReady"
UNSUPPORTED_CONTROLLER = "UnsupportedController"
CREATING = "CreatingExecution"
BACKEND_ERROR = "BackendError"
# terminal and unknown
CANCELLED = "Cancelled"
FAILED_REASONS = {"Failed": "StepFailed", "Cancelled": CANCELLED, "TimedOut": "DeadlineExceeded"}
EXECUTION_LOST = "ExecutionLost"
OBSERVE_FAILED = "ObserveFailed"


def _conditions(job: Job, status: dict, now: datetime, **conditions: tuple) -> dict:
    return job_status.with_reasons(status, now, job.generation, **conditions)


# --- Accepted -----------------------------------------------------------------------------


def _not_accepted(job: Job, status: dict, now: datetime, reason: str, message: str) -> dict:
    metrics.NOT_ACCEPTED.labels(reason if reason in metrics.NOT_ACCEPTED_REASONS else "Other").inc()
    new = _conditions(job, status, now, Accepted=("False", reason, message))
    new.update(phase=JobPhase.PENDING, message=message)
    return new


def _namespace(job: Job) -> Any:
    from portal.models import Namespace

    return Namespace.objects.filter(name=job.namespace).first()


def _resolved(job: Job, status: dict) -> tuple[dict | None, str, str]:
    """(status.resolvedJobClass, reason, message): resolved now if it was not yet."""
    resolved = status.get("resolvedJobClass")
    if resolved:
        return resolved, "", ""
    namespace = _namespace(job)
    found = resolution.resolve(job.requested_class, namespace.annotations if namespace else {})
    if found.job_class is None:
        return None, found.reason, found.message
    spec = found.job_class.spec or {}
    ref = spec.get("parametersRef") or {}
    return (
        {
            "name": found.job_class.name,
            "uid": str(found.job_class.uid),
            "controllerName": spec.get("controllerName", ""),
            "parametersRef": {
                "group": ref.get("group", ""),
                "kind": ref.get("kind", ""),
                "name": ref.get("name", ""),
                "uid": "",
            },
        },
        "",
        "",
    )


def _frozen_class(resolved: dict) -> tuple[JobClass | None, str, str]:
    """The class object resolvedJobClass names, only if it is still the same object."""
    job_class = JobClass.objects.filter(name=resolved["name"]).first()
    if job_class is None:
        return None, resolution.NOT_FOUND, f"JobClass {resolved['name']} no longer exists"
    if str(job_class.uid) != resolved["uid"]:
        return (
            None,
            CLASS_REPLACED,
            f"JobClass {resolved['name']} was re-created (uid {job_class.uid}, this Job resolved "
            f"uid {resolved['uid']}): a Job never moves to another class object",
        )
    return job_class, "", ""


def _frozen_parameters(resolved: dict) -> tuple[Any | None, str, str]:
    ref = resolved["parametersRef"]
    label = f"{ref['kind']} {ref['name']}"
    found = parameters.lookup(ref)
    if found is None:
        return None, PARAMETERS_NOT_FOUND, f"{label} not found"
    if ref.get("uid") and str(found.uid) != ref["uid"]:
        return (
            None,
            PARAMETERS_REPLACED,
            f"{label} was re-created (uid {found.uid}, this Job resolved uid {ref['uid']})",
        )
    return found, "", ""


def _allowed(job_class: JobClass, job: Job) -> bool:
    selector = (job_class.spec or {}).get("allowedNamespaces")
    if selector is None:
        return True
    namespace = _namespace(job)
    return compile_selector(selector, "allowedNamespaces").matches(
        namespace.labels if namespace else {}
    )


def accept(job: Job, status: dict, now: datetime) -> dict:
    """The status after one acceptance attempt (Accepted=True, or False with why)."""
    if job.cancel_requested:
        return _finished(job, status, now, "Failed", CANCELLED, "cancelled before it was accepted")
    resolved, reason, message = _resolved(job, status)
    if resolved is None:
        return _not_accepted(job, status, now, reason, message)
    status = {**status, "resolvedJobClass": resolved}
    job_class, reason, message = _frozen_class(resolved)
    if job_class is None:
        return _not_accepted(job, status, now, reason, message)
    class_accepted = job_status.condition(job_class.status, "Accepted")
    if (
        class_accepted.get("status") != "True"
        or class_accepted.get("observedGeneration") != job_class.generation
    ):
        why = class_accepted.get("reason") or "not yet reconciled"
        return _not_accepted(
            job,
            status,
            now,
            CLASS_NOT_ACCEPTED,
            f"JobClass {job_class.name} is not Accepted ({why}): "
            f"{class_accepted.get('message', '')}".rstrip(": "),
        )
    params, reason, message = _frozen_parameters(resolved)
    if params is None:
        return _not_accepted(job, status, now, reason, message)
    resolved = {**resolved, "parametersRef": {**resolved["parametersRef"], "uid": str(params.uid)}}
    status["resolvedJobClass"] = resolved
    if not _allowed(job_class, job):
        return _not_accepted(
            job,
            status,
            now,
            NAMESPACE_NOT_ALLOWED,
            f"namespace {job.namespace} does not match JobClass {job_class.name}'s "
            "allowedNamespaces",
        )
    effective, problems = effective_resources(
        (job_class.spec or {}).get("resources"), (job.spec or {}).get("resources")
    )
    if problems:
        return _not_accepted(job, status, now, INVALID_RESOURCES, "; ".join(problems))
    missing = env.check(job.namespace, (job.spec or {}).get("env"))
    if missing:
        return _not_accepted(job, status, now, REFERENCE_NOT_FOUND, missing)
    adapter = adapters.get(resolved["controllerName"])
    refusal = getattr(adapter, "admit", None)
    if refusal is not None:
        refused = refusal(job.spec or {}, params.spec or {})
        if refused:
            return _not_accepted(job, status, now, *refused)
    new = _conditions(
        job,
        status,
        now,
        Accepted=("True", "Accepted", f"accepted by JobClass {job_class.name}"),
        Scheduled=("False", "WaitingForExecution", "the execution is about to be created"),
    )
    new.update(phase=JobPhase.PENDING, effectiveResources=effective, message="")
    return new


# --- Scheduled ----------------------------------------------------------------------------


def _waiting(job: Job, status: dict, now: datetime, reason: str, message: str) -> dict:
    new = _conditions(job, status, now, Scheduled=("False", reason, message))
    new["message"] = message
    return new


def _request(job: Job, status: dict, params: Any, values: dict[str, str]) -> ExecutionRequest:
    return ExecutionRequest(
        namespace=job.namespace,
        name=job.name,
        uid=str(job.uid),
        spec=job.spec or {},
        parameters=params.spec or {},
        parameters_name=params.name,
        env=values,
        effective_resources=status.get("effectiveResources") or {},
        masked=tuple(env.secret_values(job.namespace, (job.spec or {}).get("env"))),
    )


def schedule(job: Job, status: dict, now: datetime) -> tuple[dict, bool]:
    """(new status, whether it was written) after trying to create the execution."""
    resolved = status["resolvedJobClass"]
    ref = status.get("executionRef")
    adapter = adapters.get(resolved["controllerName"])
    if adapter is None:
        return _waiting(
            job,
            status,
            now,
            UNSUPPORTED_CONTROLLER,
            f"no adapter for {resolved['controllerName']} in this portal",
        ), False
    if job.cancel_requested and not ref:
        return _finished(
            job, status, now, "Failed", CANCELLED, "cancelled before it started"
        ), False
    job_class, reason, message = _frozen_class(resolved)
    if job_class is None:
        return _waiting(job, status, now, reason, message), False
    params, reason, message = _frozen_parameters(resolved)
    if params is None:
        return _waiting(job, status, now, reason, message), False
    if job_class.ready != "True":
        ready = job_status.condition(job_class.status, "Ready")
        return _waiting(
            job,
            status,
            now,
            CLASS_NOT_READY,
            f"JobClass {job_class.name} is not Ready ({ready.get('reason', 'unknown')}): "
            f"{ready.get('message', '')}".rstrip(": "),
        ), False
    try:
        values = env.resolve(job.namespace, (job.spec or {}).get("env"))
    except env.MissingReference as exc:
        return _waiting(job, status, now, REFERENCE_NOT_FOUND, str(exc)), False
    request = _request(job, status, params, values)
    if not ref:
        try:
            ref = adapter.plan(request)
        except NotReadyToStart as exc:
            return _waiting(job, status, now, exc.reason, exc.message), False
        planned = _waiting(job, {**status, "executionRef": ref}, now, CREATING, "creating")
        planned["phase"] = JobPhase.PENDING
        if not job_status.write(job, planned):
            return planned, False
        status = planned
    try:
        adapter.ensure(ref, request)
    except NotReadyToStart as exc:
        return _waiting(job, status, now, exc.reason, exc.message), False
    except BackendError as exc:
        return _waiting(job, status, now, BACKEND_ERROR, str(exc)), False
    new = _conditions(
        job,
        status,
        now,
        Scheduled=("True", "ExecutionCreated", f"created by {adapter.controller_name}"),
    )
    new.update(phase=JobPhase.SCHEDULED, message="", startTime=format_time(now))
    return new, False


# --- observed -----------------------------------------------------------------------------


def _finished(job: Job, status: dict, now: datetime, outcome: str, reason: str, message: str):
    new = _conditions(job, status, now, **{outcome: ("True", reason, message)})
    if job_status.condition(new, "ResultUnknown"):
        new = _conditions(job, new, now, ResultUnknown=("False", "Observed", "the result is known"))
    new.update(
        phase=JobPhase.SUCCEEDED if outcome == "Succeeded" else JobPhase.FAILED,
        message=message,
        completionTime=status.get("completionTime") or format_time(now),
    )
    return new


def _unknown(job: Job, status: dict, now: datetime, reason: str, message: str) -> dict:
    new = _conditions(job, status, now, ResultUnknown=("True", reason, message))
    new.update(phase=JobPhase.UNKNOWN, message=message)
    return new


def _failure_message(seen: Observation) -> str:
    for step in seen.steps:
        if step.get("status") == "Failed":
            return (
                seen.message or f"step {step['name']} failed with exit code {step.get('exitCode')}"
            )
    return seen.message


def observe(job: Job, status: dict, now: datetime) -> dict:
    resolved = status["resolvedJobClass"]
    ref = status["executionRef"]
    adapter = adapters.get(resolved["controllerName"])
    if adapter is None:
        return _unknown(
            job, status, now, OBSERVE_FAILED, f"no adapter for {resolved['controllerName']}"
        )
    try:
        if job.cancel_requested:
            adapter.cancel(ref)
        seen = adapter.observe(ref)
    except BackendError as exc:
        return _unknown(job, status, now, OBSERVE_FAILED, f"cannot observe the execution: {exc}")
    if seen.detached:
        resumed = _resume(job, status, adapter, ref)
        if resumed is not None:
            return _unknown(job, status, now, OBSERVE_FAILED, resumed)
    if seen.phase == "Unknown" or not seen.exists:
        return _unknown(
            job,
            status,
            now,
            EXECUTION_LOST,
            seen.message or "the execution is gone: its result is unknown (it is not re-run)",
        )
    status = {**status, "steps": seen.steps}
    if seen.start_time:
        status["startTime"] = seen.start_time
    if seen.completion_time:
        status["completionTime"] = seen.completion_time
    if seen.phase == "Succeeded":
        return _finished(
            job, status, now, "Succeeded", "Completed", f"all {len(seen.steps)} steps succeeded"
        )
    if seen.phase in FAILED_REASONS:
        return _finished(
            job, status, now, "Failed", FAILED_REASONS[seen.phase], _failure_message(seen)
        )
    new = dict(status)
    if job_status.condition(new, "ResultUnknown"):
        new = _conditions(job, new, now, ResultUnknown=("False", "Observed", "observed again"))
    new["phase"] = JobPhase.RUNNING if seen.phase == "Running" else JobPhase.SCHEDULED
    return new


def _resume(job: Job, status: dict, adapter: Any, ref: dict) -> str | None:
    """The execution's record is in the backend but nothing drives it (a control worker
    lost its drivers): drive it again from the Job's spec, which never changes; None if
    resumed, else why not (retried by the next pass)."""
    request = ExecutionRequest(
        namespace=job.namespace,
        name=job.name,
        uid=str(job.uid),
        spec=job.spec or {},
        parameters={},  # the batch Job exists: nothing is created from them
        parameters_name="",
        env={},  # the pod has its env already
        effective_resources=status.get("effectiveResources") or {},
        # the resumed driver masks the log it reads again: the values are read anew
        masked=tuple(env.secret_values(job.namespace, (job.spec or {}).get("env"))),
    )
    try:
        adapter.resume(ref, request)
    except (BackendError, OSError, ValueError) as exc:
        return f"cannot resume the execution: {exc}"
    return None


# --- deletion -----------------------------------------------------------------------------


def finalize(job: Job) -> bool:
    """A deleted Job: its execution is deleted (whatever the class's state), then the Job."""
    if EXECUTION_CLEANUP not in (job.finalizers or []):
        return False
    ref = (job.status or {}).get("executionRef")
    if ref:
        controller = ((job.status or {}).get("resolvedJobClass") or {}).get("controllerName", "")
        adapter = adapters.get(controller)
        if adapter is None:
            log.warning("Job %s: no adapter for %s: its execution stays", job, controller)
            return False
        try:
            adapter.delete(ref)
        except BackendError as exc:
            log.warning("Job %s: deleting its execution failed (retried): %s", job, exc)
            return False
    try:
        store.remove_finalizer(
            registry.for_model(Job), job, EXECUTION_CLEANUP, context=JOB_CONTROLLER
        )
    except StatusError as exc:  # changed meanwhile: the next pass retries
        log.info("Job %s: finalizer release deferred: %s", job, exc)
        return False
    return True


# --- one pass -----------------------------------------------------------------------------


def _write(job: Job, new: dict) -> bool:
    """The status write, and the Event of the phase it reaches."""
    before = (job.status or {}).get("phase") or ""
    won = job_status.write(job, new)
    if won:
        job_events.phase_changed(job, before, new)
    return won


def reconcile(job: Job, now: datetime) -> bool:
    """Move one Job as far as it can go now; True if anything was written. A scheduled or
    running Job is observed again after ``KRUNTIMES_JOB_POLL_SECONDS`` (``needs_poll``)."""
    if job.deletion_timestamp is not None:
        return finalize(job)
    if job.is_finished:
        return False
    wrote = False
    status = dict(job.status or {})
    if not job_status.is_true(status, "Accepted"):
        new = accept(job, status, now)
        wrote = _write(job, new)
        if not wrote or not job_status.is_true(new, "Accepted") or job.is_finished:
            return wrote
        status = new
    confirmed = job_status.is_true(status, "Scheduled")
    if not confirmed:
        new, _ = schedule(job, status, now)
        won = _write(job, new)
        return wrote or won
    new = observe(job, status, now)
    won = _write(job, new)
    return wrote or won


def needs_poll(job: Job) -> bool:
    """Whether the Job's execution runs on and is observed by polling its backend."""
    return (
        job.deletion_timestamp is None
        and not job.is_finished
        and job_status.is_true(job.status or {}, "Scheduled")
    )


def log_of(job: Job, limit_bytes: int | None = None) -> str:
    """The execution's log ("" before it exists or without an adapter)."""
    status = job.status or {}
    ref = status.get("executionRef")
    adapter = adapters.get((status.get("resolvedJobClass") or {}).get("controllerName", ""))
    if not ref or adapter is None:
        return ""
    try:
        return adapter.log(ref, limit_bytes=limit_bytes)
    except (BackendError, OSError) as exc:
        return f"(the log cannot be read: {exc})"
