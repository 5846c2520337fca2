"""Prometheus metrics of the jobclasses controllers. Labels are fixed strings of the code
(reasons, phases), never names or namespaces."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

DEFAULT_CLASSES = Gauge(
    "kruntimes_jobclass_global_defaults",
    "JobClasses annotated as the global default; more than 1 holds every Job without a class "
    "(AmbiguousDefaultJobClass): alert on it.",
    multiprocess_mode="max",
)
JOB_TRANSITIONS = Counter(
    "kruntimes_job_transitions_total", "Job phase changes written, by the phase reached.", ["phase"]
)
# the reasons the counter names; anything else (an adapter's own refusal) counts as Other
NOT_ACCEPTED_REASONS = (
    "NoDefaultJobClass",
    "AmbiguousDefaultJobClass",
    "JobClassNotFound",
    "JobClassTerminating",
    "JobClassReplaced",
    "JobClassNotAccepted",
    "ParametersNotFound",
    "ParametersReplaced",
    "NamespaceNotAllowed",
    "InvalidResources",
    "ReferenceNotFound",
)
NOT_ACCEPTED = Counter(
    "kruntimes_job_not_accepted_total",
    "Acceptance passes that left a Job Accepted=False, by reason.",
    ["reason"],
)
