"""The JobClass controller (seed 003, "Status", "生命周期与修改").

``Accepted``: the controllerName is one this portal has an adapter for
(``UnsupportedController``), parametersRef names a kind of that adapter in this API group
(``InvalidParametersReference``), the object exists (``ParametersNotFound``), and the resource
policy is self-consistent (``InvalidResourcePolicy``). ``Ready``: the adapter's readiness check
of its parameters, only for an Accepted class (``NotAccepted`` otherwise). Both carry the
class's generation as observedGeneration.

Protection: a JobClass holds ``job-class-protection`` while a non-terminal Job references its
UID; a parameters object holds ``parameters-protection`` while a JobClass references it. A
blocked deletion says why in the logs and in the object's admin page; forcing it is the
operator's runbook action (admin, superuser, audited).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from portal.auth.identities import register_controller
from portal.machinery import store
from portal.machinery.admission import WriteContext
from portal.machinery.errors import StatusError
from portal.machinery.registry import registry

from . import adapters, parameters
from . import status as class_status
from .models import (
    CLASS_PROTECTION,
    GROUP,
    PARAMETERS_PROTECTION,
    TERMINAL_JOB_PHASES,
    Job,
    JobClass,
)
from .resources import policy_problems

log = logging.getLogger(__name__)

CLASS_CONTROLLER = WriteContext(
    user=register_controller(
        "jobclass-controller",
        [
            {
                "apiGroups": [GROUP],
                "resources": [
                    "jobclasses",
                    "kubernetesexecutionparameters",
                    "opensandboxexecutionparameters",
                    "localexecutionparameters",
                ],
                "verbs": ["get", "list", "patch"],
            }
        ],
    )
)

UNSUPPORTED_CONTROLLER = "UnsupportedController"
INVALID_PARAMETERS_REFERENCE = "InvalidParametersReference"
PARAMETERS_NOT_FOUND = "ParametersNotFound"
INVALID_RESOURCE_POLICY = "InvalidResourcePolicy"
NOT_ACCEPTED = "NotAccepted"


def acceptance(job_class: JobClass) -> tuple[tuple[str, str, str], Any | None]:
    """((status, reason, message) of Accepted, the parameters object when it was found)."""
    spec = job_class.spec or {}
    controller = spec.get("controllerName", "")
    adapter = adapters.get(controller)
    if adapter is None:
        supported = ", ".join(adapters.supported())
        return (
            "False",
            UNSUPPORTED_CONTROLLER,
            f"no controller in this portal handles {controller} (supported: {supported})",
        ), None
    ref = spec.get("parametersRef") or {}
    if ref.get("group") != GROUP or ref.get("kind") not in adapter.parameter_kinds:
        kinds = ", ".join(f"{GROUP}/{kind}" for kind in adapter.parameter_kinds)
        return (
            "False",
            INVALID_PARAMETERS_REFERENCE,
            f"{controller} takes parameters of kind {kinds}, not "
            f"{ref.get('group')}/{ref.get('kind')}",
        ), None
    found = parameters.lookup(ref)
    if found is None:
        return ("False", PARAMETERS_NOT_FOUND, f"{ref['kind']} {ref['name']} not found"), None
    problems = policy_problems(spec.get("resources"))
    if problems:
        return ("False", INVALID_RESOURCE_POLICY, "; ".join(problems)), found
    return ("True", "Accepted", f"handled by {controller}"), found


def reconcile_class(job_class: JobClass, now: datetime) -> bool:
    if job_class.deletion_timestamp is not None:
        return release_class(job_class)
    accepted, found = acceptance(job_class)
    if accepted[0] == "True":
        adapter = adapters.get(job_class.controller_name)
        assert adapter is not None and found is not None  # acceptance checked both
        readiness = adapter.readiness(found.name, found.spec or {})
        ready = ("True" if readiness.ready else "False", readiness.reason, readiness.message)
    else:
        ready = ("False", NOT_ACCEPTED, "the class is not Accepted")
    new = class_status.with_reasons(
        job_class.status or {}, now, job_class.generation, Accepted=accepted, Ready=ready
    )
    return class_status.write(job_class, new)


def jobs_holding(job_class: JobClass) -> list[str]:
    """The non-terminal Jobs that reference this class object (by UID)."""
    return [
        f"{ns}/{name}"
        for ns, name in Job.objects.filter(job_class_uid=str(job_class.uid))
        .exclude(phase__in=TERMINAL_JOB_PHASES)
        .values_list("namespace", "name")
    ]


def release_class(job_class: JobClass) -> bool:
    if CLASS_PROTECTION not in (job_class.finalizers or []):
        return False
    holding = jobs_holding(job_class)
    if holding:
        log.info("JobClass %s is held by %d non-terminal Jobs", job_class.name, len(holding))
        return False
    return _remove(job_class, CLASS_PROTECTION)


def classes_holding(params: Any) -> list[str]:
    kind = type(params).__name__
    return list(
        JobClass.objects.filter(parameters_kind=kind, parameters_name=params.name).values_list(
            "name", flat=True
        )
    )


def release_parameters(params: Any) -> bool:
    if params.deletion_timestamp is None or PARAMETERS_PROTECTION not in (params.finalizers or []):
        return False
    if classes_holding(params):
        return False
    return _remove(params, PARAMETERS_PROTECTION)


def _remove(obj: Any, finalizer: str) -> bool:
    try:
        store.remove_finalizer(
            registry.for_model(type(obj)), obj, finalizer, context=CLASS_CONTROLLER
        )
    except StatusError as exc:  # changed meanwhile: the next pass retries
        log.info("%s %s: finalizer release deferred: %s", type(obj).__name__, obj, exc)
        return False
    return True


def reconcile_all(now: datetime, name: str | None = None) -> int:
    """Every class (or the one named), and every parameters object being deleted."""
    classes = JobClass.objects.all() if name is None else JobClass.objects.filter(name=name)
    changed = sum(reconcile_class(job_class, now) for job_class in classes)
    for model in parameters.PARAMETER_MODELS.values():
        for params in model.objects.filter(deletion_timestamp__isnull=False):
            changed += release_parameters(params)
    return changed
