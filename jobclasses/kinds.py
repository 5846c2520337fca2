"""The kinds the jobclasses app serves (group ``execution.ayatori.ddupan.top/v1alpha1``):
cluster-scoped JobClass (``jc``) and its adapters' parameter kinds, namespaced Job."""

from __future__ import annotations

from portal.machinery.conditions import get_condition
from portal.machinery.registry import Column, ResourceKind, registry
from portal.machinery.status_strategy import StatusStrategy, final_phases

from .models import (
    CLASS_PROTECTION,
    EXECUTION_CLEANUP,
    GROUP,
    PARAMETERS_PROTECTION,
    VERSION,
    condition_status,
)

CATEGORIES = ("execution",)


def job_reason(job) -> str:
    """The reason a Job is where it is: its outcome, or what it waits for."""
    conditions = (job.status or {}).get("conditions")
    for ctype, shown_when in (
        ("Succeeded", True),
        ("Failed", True),
        ("ResultUnknown", True),
        ("Accepted", False),
        ("Scheduled", False),
    ):
        condition = get_condition(conditions, ctype)
        if condition is not None and (condition.get("status") == "True") is shown_when:
            return str(condition.get("reason", ""))
    return ""


def _steps(job) -> str:
    steps = (job.status or {}).get("steps") or []
    done = sum(1 for s in steps if s.get("status") == "Succeeded")
    return f"{done}/{len(steps)}" if steps else ""


PARAMETERS_DESCRIPTIONS = {
    "KubernetesExecutionParameters": "KubernetesExecutionParameters are the settings of a "
    "JobClass whose Jobs run as Kubernetes Pods (cluster-scoped).",
    "OpenSandboxExecutionParameters": "OpenSandboxExecutionParameters are the settings of a "
    "JobClass whose Jobs run in an OpenSandbox service (cluster-scoped).",
    "LocalExecutionParameters": "LocalExecutionParameters are the settings of a JobClass whose "
    "Jobs run as processes on the control plane's worker machine (cluster-scoped).",
}


def register_jobclass_kinds() -> None:
    from . import models, serializers
    from .triggers import on_job_change, on_job_class_change, on_parameters_change
    from .validators import JOB_CLASS_VALIDATORS, JOB_VALIDATORS

    registry.register(
        ResourceKind(
            group=GROUP,
            version=VERSION,
            kind="JobClass",
            plural="jobclasses",
            description=(
                "JobClass names the controller that executes Jobs of the class, its parameters,"
                " and the namespaces and resources it allows (cluster-scoped)."
            ),
            model=models.JobClass,
            namespaced=False,
            short_names=("jc",),
            categories=CATEGORIES,
            body={
                "spec": serializers.JobClassSpecSerializer,
                "status": serializers.JobClassStatusSerializer,
            },
            validators=JOB_CLASS_VALIDATORS,
            default_finalizers=(CLASS_PROTECTION,),
            on_change=(on_job_class_change,),
            columns=(
                Column("CONTROLLER", lambda o: o.controller_name),
                Column("ACCEPTED", lambda o: o.accepted),
                Column("READY", lambda o: o.ready),
                Column("DEFAULT", lambda o: "true" if o.is_default else "", wide=True),
                Column(
                    "PARAMETERS", lambda o: f"{o.parameters_kind}/{o.parameters_name}", wide=True
                ),
            ),
        )
    )
    for kind, plural, model, spec, columns in (
        (
            "KubernetesExecutionParameters",
            "kubernetesexecutionparameters",
            models.KubernetesExecutionParameters,
            serializers.KubernetesExecutionParametersSpecSerializer,
            (Column("SERVICE ACCOUNT", lambda o: (o.spec or {}).get("serviceAccountName", "")),),
        ),
        (
            "OpenSandboxExecutionParameters",
            "opensandboxexecutionparameters",
            models.OpenSandboxExecutionParameters,
            serializers.OpenSandboxExecutionParametersSpecSerializer,
            (Column("ENDPOINT", lambda o: (o.spec or {}).get("endpoint", "")),),
        ),
        (
            "LocalExecutionParameters",
            "localexecutionparameters",
            models.LocalExecutionParameters,
            serializers.LocalExecutionParametersSpecSerializer,
            (
                Column("WORK ROOT", lambda o: (o.spec or {}).get("workRoot", "(data dir)")),
                Column("MAX JOBS", lambda o: (o.spec or {}).get("maxConcurrentJobs", "")),
            ),
        ),
    ):
        registry.register(
            ResourceKind(
                group=GROUP,
                version=VERSION,
                kind=kind,
                plural=plural,
                singular=plural,
                description=PARAMETERS_DESCRIPTIONS[kind],
                model=model,
                namespaced=False,
                categories=CATEGORIES,
                body={"spec": spec, "status": serializers.ObservedStatusSerializer},
                default_finalizers=(PARAMETERS_PROTECTION,),
                on_change=(on_parameters_change,),
                columns=columns,
            )
        )
    registry.register(
        ResourceKind(
            group=GROUP,
            version=VERSION,
            kind="Job",
            plural="jobs",
            description=(
                "Job is a unit of work (steps or a command in an image) executed by the "
                "controller of its JobClass."
            ),
            model=models.Job,
            status=StatusStrategy(rules=(final_phases("Job", *models.TERMINAL_JOB_PHASES),)),
            categories=CATEGORIES,
            body={"spec": serializers.JobSpecSerializer, "status": serializers.JobStatusSerializer},
            validators=JOB_VALIDATORS,
            default_finalizers=(EXECUTION_CLEANUP,),
            on_change=(on_job_change,),
            subresources={"log": ("get",)},
            columns=(
                Column("PHASE", lambda o: o.phase),
                Column("CLASS", lambda o: o.job_class),
                Column("STEPS", _steps),
                Column("REASON", job_reason),
                Column("ACCEPTED", lambda o: condition_status(o.status, "Accepted"), wide=True),
                Column("CLASS UID", lambda o: o.job_class_uid, wide=True),
            ),
        )
    )


def register_config_hooks() -> None:
    """Namespaces, Secrets and ConfigMaps wake the Jobs that wait on them."""
    from .triggers import on_config_change, on_namespace_change

    for plural, hook in (
        ("namespaces", on_namespace_change),
        ("secrets", on_config_change),
        ("configmaps", on_config_change),
    ):
        kind = registry.get("", "v1", plural)
        if kind is not None and hook not in kind.on_change:
            kind.on_change = (*kind.on_change, hook)
